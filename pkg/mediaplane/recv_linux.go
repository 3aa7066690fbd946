//go:build linux

package mediaplane

import (
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readBatch datagrams are read per recvmmsg: at a thousand viewers'
// reports and checks a second, a batch rarely fills, but a burst costs
// one system call instead of dozens.
const readBatch = 32

// batchReader holds recvmmsg's buffers and results; read is bound once so
// handing it to RawConn.Read allocates nothing.
type batchReader struct {
	bufs  []byte
	names []sockaddr
	iovs  []unix.Iovec
	hdrs  []mmsghdr
	n     int
	errno syscall.Errno
	read  func(fd uintptr) bool
}

func newBatchReader() *batchReader {
	r := &batchReader{bufs: make([]byte, readBatch*maxDatagram), names: make([]sockaddr, readBatch),
		iovs: make([]unix.Iovec, readBatch), hdrs: make([]mmsghdr, readBatch)}
	for i := range r.hdrs {
		r.iovs[i].Base = &r.bufs[i*maxDatagram]
		r.iovs[i].SetLen(maxDatagram)
		r.hdrs[i].hdr.Name = &r.names[i][0]
		r.hdrs[i].hdr.Iov = &r.iovs[i]
		r.hdrs[i].hdr.SetIovlen(1)
	}
	r.read = r.recvmmsg
	return r
}

func (r *batchReader) recvmmsg(fd uintptr) bool {
	for i := range r.hdrs {
		r.hdrs[i].hdr.Namelen = uint32(len(r.names[i]))
		r.hdrs[i].hdr.Flags = 0
	}
	// Non-blocking, so RawSyscall: telling the scheduler about a call
	// that never sleeps only invites a thread handoff.
	n, _, e := syscall.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&r.hdrs[0])),
		readBatch, unix.MSG_DONTWAIT, 0, 0)
	if e == syscall.EAGAIN {
		return false // wait until readable
	}
	r.n, r.errno = int(n), e
	return true
}

// readLoop is the demultiplexer goroutine: it reads the socket until it
// is closed and dispatches every datagram.
func (s *Server) readLoop() {
	r := newBatchReader()
	for {
		if err := s.raw.Read(r.read); err != nil {
			return // the socket was closed
		}
		if r.errno != 0 {
			continue // EINTR, or an error queued by an ICMP message
		}
		now := time.Now().UnixNano()
		for i := range r.n {
			ap, ok := r.names[i].addrPort()
			if !ok || r.hdrs[i].hdr.Flags&unix.MSG_TRUNC != 0 {
				s.stats.datagrams.Add(1)
				s.stats.malformed.Add(1)
				continue
			}
			s.handle(r.bufs[i*maxDatagram:i*maxDatagram+int(r.hdrs[i].len)], ap, now)
		}
	}
}
