package loadgen

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/srtwhep/srtwhep/internal/mmsg"
)

type dgram struct {
	buf  *[]byte
	n    int
	from netip.AddrPort
}

// rsock is one session's UDP socket as pion's ICE UDP mux sees it: reads
// come from the reactor's queue, writes go straight to the socket. It is
// outside Go's network poller on purpose: only the reactor watches it.
type rsock struct {
	r     *reactor
	fd    int
	local *net.UDPAddr
	acc   *accountant
	in    chan dgram

	closeOnce sync.Once
}

// open creates a non-blocking UDP socket bound to local:0 and registers it.
func (r *reactor) open(local netip.Addr, acc *accountant) (*rsock, error) {
	family := unix.AF_INET
	var sa unix.Sockaddr = &unix.SockaddrInet4{Addr: local.As4()}
	if local.Is6() {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Addr: local.As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("loadgen: UDP socket: %w (too many sessions for the open-files limit? raise ulimit -n)", err)
	}
	fail := func(what string, err error) (*rsock, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("loadgen: %s: %w", what, err)
	}
	setReceiveBuffer(fd, socketBuffer)
	if r.gro {
		// Best effort: without UDP_GRO every datagram is its own message.
		_ = unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_GRO, 1)
	}
	// Each datagram's arrival time, for jitter and stalls, in every mode so
	// stalls compare across modes: a busy generator's late receive round
	// must not look like a pause of the server. Best effort: without it a
	// datagram's time is its round's.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	if err := unix.Bind(fd, sa); err != nil {
		return fail("bind UDP socket to "+local.String(), err)
	}
	got, err := unix.Getsockname(fd)
	if err != nil {
		return fail("getsockname", err)
	}
	var port int
	switch a := got.(type) {
	case *unix.SockaddrInet4:
		port = a.Port
	case *unix.SockaddrInet6:
		port = a.Port
	}
	queue := passQueueLen
	if !acc.swallow {
		queue = decodeQueueLen
	}
	s := &rsock{r: r, fd: fd, local: net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, uint16(port))), acc: acc,
		in: make(chan dgram, queue)}
	r.mu.Lock()
	r.socks[int32(fd)] = s
	r.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	if err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		r.mu.Lock()
		delete(r.socks, int32(fd))
		r.mu.Unlock()
		return fail("epoll_ctl", err)
	}
	return s, nil
}

func setReceiveBuffer(fd, n int) {
	// FORCE needs CAP_NET_ADMIN; without it the kernel caps at rmem_max.
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, n)
	}
}

// connected applies the receive buffer asked for connected viewers. Only
// now: a buffer too small for the DTLS handshake's flights would keep the
// session from ever connecting, and it stands for a narrow link while
// media flows.
func (s *rsock) connected() {
	if s.r.rcvbuf > 0 {
		setReceiveBuffer(s.fd, s.r.rcvbuf)
	}
}

// ReadFromAddrPort is the allocation-free read pion's UDP mux prefers.
func (s *rsock) ReadFromAddrPort(b []byte) (int, netip.AddrPort, error) {
	d, ok := <-s.in
	if !ok {
		return 0, netip.AddrPort{}, net.ErrClosed
	}
	n := copy(b, (*d.buf)[:d.n])
	s.r.pool.Put(d.buf)
	return n, d.from, nil
}

// WriteToAddrPort sends one datagram (STUN and DTLS only: the session
// sends no media and no RTCP).
func (s *rsock) WriteToAddrPort(b []byte, to netip.AddrPort) (int, error) {
	// inet6 false: an IPv4 peer gets a sockaddr_in whatever the socket's
	// family, which a dual-stack AF_INET6 socket accepts as well.
	var sa mmsg.Sockaddr
	n := sa.Set(to, false)
	if e := mmsg.SendTo(uintptr(s.fd), b, &sa, n); e != 0 {
		return 0, fmt.Errorf("loadgen: sendto %s: %w", to, e)
	}
	return len(b), nil
}

func (s *rsock) ReadFrom(b []byte) (int, net.Addr, error) {
	n, from, err := s.ReadFromAddrPort(b)
	if err != nil {
		return 0, nil, err
	}
	return n, net.UDPAddrFromAddrPort(from), nil
}

func (s *rsock) WriteTo(b []byte, addr net.Addr) (int, error) {
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return 0, fmt.Errorf("loadgen: WriteTo needs a *net.UDPAddr, got %T", addr)
	}
	return s.WriteToAddrPort(b, ua.AddrPort())
}

// Close unregisters the socket under the reactor's write lock, so the
// reactor is never between reading it and queueing to in.
func (s *rsock) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.r.mu.Lock()
		_ = unix.EpollCtl(s.r.epfd, unix.EPOLL_CTL_DEL, s.fd, nil)
		delete(s.r.socks, int32(s.fd))
		err = unix.Close(s.fd)
		close(s.in)
		s.r.mu.Unlock()
	})
	return err
}

func (s *rsock) LocalAddr() net.Addr { return s.local }

// Deadlines are not used by pion's UDP mux; reads end with Close.
func (s *rsock) SetDeadline(time.Time) error      { return nil }
func (s *rsock) SetReadDeadline(time.Time) error  { return nil }
func (s *rsock) SetWriteDeadline(time.Time) error { return nil }
