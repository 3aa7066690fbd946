package mmsg

import (
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Reader runs f with the socket's descriptor, waiting until the socket is
// readable and calling f again whenever f returns false; a
// syscall.RawConn is one.
type Reader interface {
	Read(f func(fd uintptr) (done bool)) error
}

// RecvBatch is a recvmmsg batch: a buffer, a source address and
// optionally a control buffer per message, all reused. A RecvBatch
// belongs to one goroutine; what a receive returned is valid until the
// next one.
type RecvBatch struct {
	hdrs  []Hdr
	iovs  []unix.Iovec
	names []Sockaddr
	bufs  []byte
	size  int // bytes per message buffer
	ctrl  []byte
	csize int // control bytes per message

	// Results of the last call, written by read, which is bound once so
	// handing it to Reader.Read allocates nothing.
	n     int
	errno syscall.Errno
	read  func(fd uintptr) bool
}

// NewRecvBatch returns a batch of msgs messages of up to size bytes each,
// with control bytes of ancillary data per message (0 for none; it is
// rounded up to keep every control buffer aligned). A longer datagram is
// cut to size and flagged (Truncated).
func NewRecvBatch(msgs, size, control int) *RecvBatch {
	control = (control + 7) &^ 7
	r := &RecvBatch{
		hdrs:  make([]Hdr, msgs),
		iovs:  make([]unix.Iovec, msgs),
		names: make([]Sockaddr, msgs),
		bufs:  make([]byte, msgs*size),
		size:  size,
		ctrl:  controlBuffer(msgs * control),
		csize: control,
	}
	for i := range r.hdrs {
		r.iovs[i].Base = &r.bufs[i*size]
		r.iovs[i].SetLen(size)
		h := &r.hdrs[i].Msghdr
		h.Name = &r.names[i][0]
		h.Iov = &r.iovs[i]
		h.SetIovlen(1)
		if control > 0 {
			h.Control = &r.ctrl[i*control]
		}
	}
	r.read = r.recvmmsg
	return r
}

// Recv receives at least one datagram, waiting in the netpoller while
// none is queued. errno is the kernel's error for the call (EINTR, or an
// error an ICMP message queued on the socket) with n 0; err is non-nil
// only when rd fails (the socket was closed).
func (r *RecvBatch) Recv(rd Reader) (n int, errno syscall.Errno, err error) {
	if err := rd.Read(r.read); err != nil {
		return 0, 0, err
	}
	return r.n, r.errno, nil
}

// RecvFD makes one non-blocking recvmmsg on fd, for sockets outside Go's
// netpoller (an epoll loop of its own); errno is EAGAIN when nothing is
// queued.
func (r *RecvBatch) RecvFD(fd int) (n int, errno syscall.Errno) {
	if !r.recvmmsg(uintptr(fd)) {
		return 0, syscall.EAGAIN
	}
	return r.n, r.errno
}

// recvmmsg is the Reader's callback for Recv.
func (r *RecvBatch) recvmmsg(fd uintptr) bool {
	// The kernel overwrites the lengths and flags it returns.
	for i := range r.hdrs {
		h := &r.hdrs[i].Msghdr
		h.Namelen = unix.SizeofSockaddrInet6
		h.Flags = 0
		if r.csize > 0 {
			h.SetControllen(r.csize)
		}
	}
	// MSG_DONTWAIT and RawSyscall: the call never sleeps (waiting is the
	// netpoller's job), so the scheduler need not hand the P away.
	n, _, e := syscall.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&r.hdrs[0])),
		uintptr(len(r.hdrs)), unix.MSG_DONTWAIT, 0, 0)
	if e == syscall.EAGAIN {
		return false // nothing queued: wait until readable
	}
	r.n, r.errno = int(n), e
	if e != 0 {
		r.n = 0
	}
	return true
}

// Data is datagram i of the last receive (cut to the buffer size when
// Truncated).
func (r *RecvBatch) Data(i int) []byte {
	at := i * r.size
	return r.bufs[at : at+int(r.hdrs[i].Len)]
}

// Truncated reports whether datagram i was longer than the buffer.
func (r *RecvBatch) Truncated(i int) bool { return r.hdrs[i].Msghdr.Flags&unix.MSG_TRUNC != 0 }

// Addr is datagram i's source; false for a family other than IPv4 or
// IPv6.
func (r *RecvBatch) Addr(i int) (netip.AddrPort, bool) { return r.names[i].AddrPort() }

// Control is datagram i's ancillary data, as the kernel wrote it.
func (r *RecvBatch) Control(i int) []byte {
	if r.csize == 0 {
		return nil
	}
	at := i * r.csize
	return r.ctrl[at : at+int(r.hdrs[i].Msghdr.Controllen)]
}
