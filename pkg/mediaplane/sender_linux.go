//go:build linux

package mediaplane

import (
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxGSOSegments and maxGSOBytes keep a segmented message within what
// the kernel accepts (UDP_MAX_SEGMENTS, one 64 KiB IP datagram).
const (
	maxGSOSegments = 64
	maxGSOBytes    = 65000
)

var cmsgSpace = unix.CmsgSpace(2)

// sendState is the sendmmsg side of a Sender: one message per run of a
// viewer's packets that UDP GSO can carry as one (all segments the size
// of the first, the last possibly shorter), each slot one iovec.
type sendState struct {
	iovs  []unix.Iovec
	msgs  []mmsghdr
	names []sockaddr
	cmsgs []byte
	first []int // first slot of each message
	segs  []int // slots in each message
	nmsgs int
	short bool // the last message ends in a shorter segment

	// The sendmmsg call's arguments and results live here, and write is
	// bound once, so handing it to RawConn.Write allocates nothing.
	off, sent int
	errno     syscall.Errno
	write     func(fd uintptr) bool
}

func (snd *Sender) initSend(packets int) {
	st := &snd.sendState
	st.write = snd.sendmmsg
	st.iovs = make([]unix.Iovec, packets)
	st.msgs = make([]mmsghdr, packets)
	st.names = make([]sockaddr, packets)
	st.cmsgs = make([]byte, packets*cmsgSpace)
	st.first = make([]int, packets)
	st.segs = make([]int, packets)
}

// add puts the encrypted slot into the current message of r's frame, or
// starts a message.
func (snd *Sender) add(r *peerAddr, slot int, frameStart bool) {
	n := snd.lens[slot]
	iov := &snd.iovs[slot]
	iov.Base = &snd.buf[slot*slotSize]
	iov.SetLen(n)
	if m := snd.nmsgs - 1; !frameStart && m >= 0 && snd.srv.gso.Load() && !snd.short &&
		n <= snd.lens[snd.first[m]] && snd.segs[m] < maxGSOSegments &&
		(snd.segs[m]+1)*snd.lens[snd.first[m]] <= maxGSOBytes {
		snd.segs[m]++
		h := &snd.msgs[m].hdr
		h.SetIovlen(snd.segs[m])
		if snd.segs[m] == 2 {
			cm := snd.cmsgs[m*cmsgSpace : (m+1)*cmsgSpace]
			ch := (*unix.Cmsghdr)(unsafe.Pointer(&cm[0]))
			ch.Level, ch.Type = unix.SOL_UDP, unix.UDP_SEGMENT
			ch.SetLen(unix.CmsgLen(2))
			binary.NativeEndian.PutUint16(cm[unix.CmsgLen(0):], uint16(snd.lens[snd.first[m]]))
			h.Control = &cm[0]
			h.SetControllen(cmsgSpace)
		}
		snd.short = n < snd.lens[snd.first[m]]
		return
	}
	m := snd.nmsgs
	snd.nmsgs++
	snd.names[m] = r.name
	snd.first[m], snd.segs[m], snd.short = slot, 1, false
	h := &snd.msgs[m].hdr
	h.Name = &snd.names[m][0]
	h.Namelen = r.nlen
	h.Iov = iov
	h.SetIovlen(1)
	h.Control = nil
	h.SetControllen(0)
}

// flush sends the queued messages with as few sendmmsg calls as the
// kernel allows. A message it refuses (an ICMP error queued for a
// departed viewer, say) is counted and skipped so it cannot hold back
// the others; the first refusal of GSO itself turns GSO off for the
// server and sends what is left one datagram per message.
func (snd *Sender) flush() error {
	st := &snd.srv.stats
	defer func() { snd.nmsgs, snd.short = 0, false }()
	for snd.off = 0; snd.off < snd.nmsgs; {
		off := snd.off
		err := snd.srv.sendDirect(snd)
		sent, errno := snd.sent, snd.errno
		st.syscalls.Add(1)
		if err != nil {
			for _, n := range snd.segs[off:snd.nmsgs] {
				st.sendErrors.Add(uint64(n))
			}
			return err
		}
		if errno != 0 {
			if snd.segs[off] > 1 && (errno == syscall.EIO || errno == syscall.EINVAL || errno == syscall.EOPNOTSUPP) {
				snd.srv.gso.Store(false)
				snd.split(off)
				continue
			}
			st.sendErrors.Add(uint64(snd.segs[off]))
			snd.off++
			continue
		}
		for _, n := range snd.segs[off : off+sent] {
			st.packetsSent.Add(uint64(n))
		}
		st.messages.Add(uint64(sent))
		snd.off += sent
	}
	return nil
}

// sendDirect runs snd's sendmmsg on the socket's descriptor without
// net's write lock, and through RawConn.Write only when the send buffer is
// full, to wait for room. The lock serialises every writer of the socket
// behind a semaphore: with hundreds of session writers on a few Ps, a
// holder preempted or a waiter woken late makes a convoy in which each
// send waits a trip through the run queue, and whole groups of viewers
// paused for 200-300 ms (a stall each at the viewer). The kernel takes
// concurrent sendmmsg calls on one UDP socket as they come.
func (s *Server) sendDirect(snd *Sender) error {
	s.fdMu.RLock()
	if s.fdClosed {
		s.fdMu.RUnlock()
		return net.ErrClosed
	}
	done := snd.sendmmsg(s.fd)
	s.fdMu.RUnlock()
	if done {
		return nil
	}
	return s.raw.Write(snd.write)
}

// writeUDP sends one datagram to ap past net's write lock, like
// sendDirect: session writers send their sender reports this way, and
// must not queue behind a handshake's or the demultiplexer's write.
func (s *Server) writeUDP(b []byte, ap netip.AddrPort) error {
	var sa sockaddr
	n := sa.set(ap, s.inet6)
	s.fdMu.RLock()
	if s.fdClosed {
		s.fdMu.RUnlock()
		return net.ErrClosed
	}
	_, _, e := syscall.RawSyscall6(unix.SYS_SENDTO, s.fd, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)),
		0, uintptr(unsafe.Pointer(&sa[0])), uintptr(n))
	s.fdMu.RUnlock()
	switch e {
	case 0:
		return nil
	case syscall.EAGAIN: // a full send buffer: wait for room in the poller
		_, err := s.conn.WriteToUDPAddrPort(b, ap)
		return err
	}
	return e
}

// sendmmsg is RawConn.Write's callback for flush.
func (snd *Sender) sendmmsg(fd uintptr) bool {
	// RawSyscall: the socket is non-blocking, so sendmmsg never sleeps,
	// and the scheduler need not hand the P away.
	r, _, e := syscall.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&snd.msgs[snd.off])),
		uintptr(snd.nmsgs-snd.off), 0, 0, 0)
	if e == syscall.EAGAIN {
		return false // wait until writable
	}
	snd.sent, snd.errno = int(r), e
	return true
}

// split rewrites messages from off on as one message per slot. It only
// runs when the kernel refused GSO, once per server, so its allocation
// does not matter.
func (snd *Sender) split(off int) {
	type run struct {
		first, segs int
		name        sockaddr
		nlen        uint32
	}
	var runs []run
	for m := off; m < snd.nmsgs; m++ {
		runs = append(runs, run{snd.first[m], snd.segs[m], snd.names[m], snd.msgs[m].hdr.Namelen})
	}
	m := off
	for _, r := range runs {
		for slot := r.first; slot < r.first+r.segs; slot++ {
			snd.names[m] = r.name
			snd.first[m], snd.segs[m] = slot, 1
			h := &snd.msgs[m].hdr
			h.Name, h.Namelen = &snd.names[m][0], r.nlen
			h.Iov = &snd.iovs[slot]
			h.SetIovlen(1)
			h.Control = nil
			h.SetControllen(0)
			m++
		}
	}
	snd.nmsgs = m
}
