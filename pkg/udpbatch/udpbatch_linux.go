//go:build linux

package udpbatch

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Conn is a *net.UDPConn whose WriteTo batches datagrams. Reads and every
// other method go straight to the socket.
type Conn struct {
	*net.UDPConn
	raw   syscall.RawConn
	inet6 bool // the socket is AF_INET6 (IPv4 peers need mapped addresses)
	size  int
	delay time.Duration

	mu      sync.Mutex
	cur     *batch
	free    []*batch
	pending []*batch
	timer   *time.Timer
	closed  bool

	// flushMu serialises system calls so batches leave in the order they
	// were filled: one peer's packets must never overtake each other.
	flushMu sync.Mutex

	stats counters

	// gso is cleared for good the first time the kernel refuses a
	// segmented send (no UDP GSO on this device or kernel).
	gso atomic.Bool
}

// mmsghdr mirrors struct mmsghdr; x/sys/unix has no type for it.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

type batch struct {
	n     int
	data  []byte // size × maxDatagram, one slot per datagram
	names []unix.RawSockaddrInet6
	iovs  []unix.Iovec
	hdrs  []mmsghdr
	// With UDP GSO, runs of equal-size datagrams to one peer (the packets
	// of one video frame to one viewer) leave as one message: groups are
	// those messages, segs how many datagrams each carries, and cmsgs
	// their UDP_SEGMENT control messages.
	groups []mmsghdr
	segs   []int
	cmsgs  []byte
}

var cmsgSpace = unix.CmsgSpace(2)

func newBatch(size int) *batch {
	b := &batch{
		data:   make([]byte, size*maxDatagram),
		names:  make([]unix.RawSockaddrInet6, size),
		iovs:   make([]unix.Iovec, size),
		hdrs:   make([]mmsghdr, size),
		groups: make([]mmsghdr, size),
		segs:   make([]int, size),
		cmsgs:  make([]byte, size*cmsgSpace),
	}
	for i := range b.hdrs {
		b.iovs[i].Base = &b.data[i*maxDatagram]
		b.hdrs[i].hdr.Name = (*byte)(unsafe.Pointer(&b.names[i]))
		b.hdrs[i].hdr.Iov = &b.iovs[i]
		b.hdrs[i].hdr.SetIovlen(1)
	}
	return b
}

// New wraps conn. size is the number of datagrams per system call and delay
// the longest a datagram may wait for its batch to fill (0 picks the
// defaults).
func New(conn *net.UDPConn, size int, delay time.Duration) (*Conn, error) {
	if size <= 0 {
		size = DefaultBatchSize
	}
	if delay <= 0 {
		delay = DefaultDelay
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	c := &Conn{UDPConn: conn, raw: raw, size: size, delay: delay}
	// Go opens wildcard "udp" sockets as dual-stack AF_INET6 even for
	// 0.0.0.0, so ask the kernel which family the socket really has.
	var serr error
	if err := raw.Control(func(fd uintptr) {
		var sa unix.Sockaddr
		sa, serr = unix.Getsockname(int(fd))
		_, c.inet6 = sa.(*unix.SockaddrInet6)
	}); err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, serr
	}
	// Don't fragment: WebRTC packets fit the path MTU by design, and with
	// DF set the kernel skips the per-packet IP ID hashing that
	// fragmentable datagrams need.
	_ = raw.Control(func(fd uintptr) {
		if c.inet6 {
			_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_DO)
		}
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO)
	})
	c.gso.Store(true)
	c.cur = newBatch(size)
	c.timer = time.AfterFunc(time.Hour, c.onTimer)
	c.timer.Stop()
	return c, nil
}

// WriteTo queues b for addr. It never blocks on the network: a full batch
// is sent by the writer that filled it.
func (c *Conn) WriteTo(b []byte, addr net.Addr) (int, error) {
	ua, ok := addr.(*net.UDPAddr)
	if !ok || len(b) > maxDatagram {
		return c.UDPConn.WriteTo(b, addr)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return 0, ErrClosed
	}
	bt := c.cur
	i := bt.n
	copy(bt.data[i*maxDatagram:], b)
	bt.iovs[i].SetLen(len(b))
	bt.hdrs[i].hdr.Namelen = c.putName(&bt.names[i], ua)
	bt.n++
	if bt.n == 1 {
		c.timer.Reset(c.delay)
	}
	full := bt.n == c.size
	if full {
		c.rotateLocked()
	}
	c.mu.Unlock()
	if full {
		c.drain()
	}
	return len(b), nil
}

// Flush sends whatever is queued now.
func (c *Conn) Flush() {
	c.mu.Lock()
	if c.cur.n > 0 {
		c.rotateLocked()
	}
	c.mu.Unlock()
	c.drain()
}

// Stats reports what went out so far.
func (c *Conn) Stats() Stats { return c.stats.snapshot() }

// Close sends what is queued, then closes the socket.
func (c *Conn) Close() error {
	c.Flush()
	c.mu.Lock()
	c.closed = true
	c.timer.Stop()
	c.mu.Unlock()
	return c.UDPConn.Close()
}

func (c *Conn) onTimer() { c.Flush() }

// rotateLocked moves the current batch to the send queue.
func (c *Conn) rotateLocked() {
	c.pending = append(c.pending, c.cur)
	if n := len(c.free); n > 0 {
		c.cur = c.free[n-1]
		c.free = c.free[:n-1]
	} else {
		c.cur = newBatch(c.size)
	}
	c.timer.Stop()
}

// drain sends queued batches in order until none is left.
func (c *Conn) drain() {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	for {
		c.mu.Lock()
		if len(c.pending) == 0 {
			c.mu.Unlock()
			return
		}
		bt := c.pending[0]
		c.pending = c.pending[1:]
		c.mu.Unlock()

		c.send(bt)

		c.mu.Lock()
		bt.n = 0
		c.free = append(c.free, bt)
		c.mu.Unlock()
	}
}

// maxGSOSegments and maxGSOBytes keep a segmented message within what
// the kernel accepts (UDP_MAX_SEGMENTS, one 64 KiB IP datagram).
const (
	maxGSOSegments = 64
	maxGSOBytes    = 65000
)

// group fills bt.groups: with GSO, consecutive datagrams to the same peer
// with the same size (the last may be shorter) become one message.
func (c *Conn) group(bt *batch) int {
	useGSO := c.gso.Load()
	g := 0
	for i := 0; i < bt.n; {
		j := i + 1
		seg := int(bt.iovs[i].Len)
		if useGSO {
			total := seg
			for j < bt.n && j-i < maxGSOSegments && bt.names[j] == bt.names[i] &&
				int(bt.iovs[j].Len) <= seg && total+int(bt.iovs[j].Len) <= maxGSOBytes {
				total += int(bt.iovs[j].Len)
				j++
				if int(bt.iovs[j-1].Len) < seg {
					break // a shorter datagram can only end a run
				}
			}
		}
		h := &bt.groups[g]
		*h = bt.hdrs[i]
		h.hdr.SetIovlen(j - i)
		h.hdr.Control = nil
		h.hdr.SetControllen(0)
		if j-i > 1 {
			cm := bt.cmsgs[g*cmsgSpace : (g+1)*cmsgSpace]
			ch := (*unix.Cmsghdr)(unsafe.Pointer(&cm[0]))
			ch.Level = unix.SOL_UDP
			ch.Type = unix.UDP_SEGMENT
			ch.SetLen(unix.CmsgLen(2))
			binary.NativeEndian.PutUint16(cm[unix.CmsgLen(0):], uint16(seg))
			h.hdr.Control = &cm[0]
			h.hdr.SetControllen(cmsgSpace)
		}
		bt.segs[g] = j - i
		g++
		i = j
	}
	return g
}

// send hands a batch to the kernel. A message the kernel refuses (an ICMP
// error queued for a departed peer, say) is counted and skipped so it
// cannot hold back the others.
func (c *Conn) send(bt *batch) {
	groups := c.group(bt)
	off := 0
	for off < groups {
		var sent int
		var errno syscall.Errno
		err := c.raw.Write(func(fd uintptr) bool {
			// RawSyscall: the socket is non-blocking, so sendmmsg never
			// sleeps; telling the scheduler about it (Syscall) would only
			// let sysmon hand the P to another thread mid-call, and on one
			// core that costs a context switch per batch.
			r, _, e := syscall.RawSyscall6(unix.SYS_SENDMMSG, fd,
				uintptr(unsafe.Pointer(&bt.groups[off])), uintptr(groups-off), 0, 0, 0)
			if e == syscall.EAGAIN {
				return false // wait until the socket is writable
			}
			sent, errno = int(r), e
			return true
		})
		c.stats.syscalls.Add(1)
		if err != nil { // socket closed
			for _, n := range bt.segs[off:groups] {
				c.stats.errors.Add(uint64(n))
			}
			return
		}
		if errno != 0 {
			if bt.segs[off] > 1 && (errno == syscall.EIO || errno == syscall.EINVAL || errno == syscall.EOPNOTSUPP) && c.gso.CompareAndSwap(true, false) {
				// No GSO here: regroup what is left as single datagrams.
				c.resendPlain(bt, off)
				return
			}
			c.stats.errors.Add(uint64(bt.segs[off]))
			off++
			continue
		}
		for _, n := range bt.segs[off : off+sent] {
			c.stats.datagrams.Add(uint64(n))
		}
		off += sent
	}
}

// resendPlain sends the datagrams of groups[from:] again, one message each.
func (c *Conn) resendPlain(bt *batch, from int) {
	first := 0
	for _, n := range bt.segs[:from] {
		first += n
	}
	rest := &batch{
		n: bt.n - first, data: bt.data, names: bt.names[first:], iovs: bt.iovs[first:], hdrs: bt.hdrs[first:],
		groups: bt.groups, segs: bt.segs, cmsgs: bt.cmsgs,
	}
	c.send(rest)
}

// putName writes addr as the socket family expects and returns its length.
func (c *Conn) putName(sa *unix.RawSockaddrInet6, addr *net.UDPAddr) uint32 {
	if ip4 := addr.IP.To4(); ip4 != nil && !c.inet6 {
		*sa = unix.RawSockaddrInet6{} // whole struct: names are compared for GSO runs
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		*sa4 = unix.RawSockaddrInet4{Family: unix.AF_INET}
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa4.Port))[:], uint16(addr.Port))
		copy(sa4.Addr[:], ip4)
		return unix.SizeofSockaddrInet4
	}
	*sa = unix.RawSockaddrInet6{Family: unix.AF_INET6}
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], uint16(addr.Port))
	copy(sa.Addr[:], addr.IP.To16())
	if addr.Zone != "" {
		if ifi, err := net.InterfaceByName(addr.Zone); err == nil {
			sa.Scope_id = uint32(ifi.Index)
		}
	}
	return unix.SizeofSockaddrInet6
}
