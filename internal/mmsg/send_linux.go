package mmsg

import (
	"encoding/binary"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Writer runs f with the socket's descriptor, waiting until the socket is
// writable and calling f again whenever f returns false. A
// syscall.RawConn is one; a user that calls f directly first (to skip
// net's write lock) and waits in RawConn.Write only when f returns false
// is another.
type Writer interface {
	Write(f func(fd uintptr) (done bool)) error
}

// SendResult counts what one Send did.
type SendResult struct {
	Syscalls  int // sendmmsg calls made
	Messages  int // messages the kernel took
	Datagrams int // datagrams in those messages (GSO segments count one each)
	Dropped   int // datagrams in messages the kernel refused, or not sent because the socket closed
	// GSORefused is set when the kernel refused a segmented message (no
	// UDP GSO on this kernel or device): what was left went out one
	// datagram per message, and later batches should not join datagrams.
	GSORefused bool
}

// cmsgSpace is one UDP_SEGMENT control message: a uint16 segment size.
var cmsgSpace = unix.CmsgSpace(2)

// SendBatch is a sendmmsg batch of datagrams in the caller's buffers, one
// iovec each. Consecutive datagrams to one destination are joined into
// one message that UDP GSO sends as one: the segments the size of the
// first, the last possibly shorter (how the kernel cuts a GSO message).
// A SendBatch belongs to one goroutine at a time.
type SendBatch struct {
	iovs  []unix.Iovec
	hdrs  []Hdr      // one per message
	names []Sockaddr // each message's destination
	cmsgs []byte     // each message's UDP_SEGMENT, cmsgSpace bytes apiece
	first []int      // each message's first iovec
	segs  []int      // datagrams in each message
	bytes []int      // bytes in each message
	n     int        // messages in use
	niov  int        // iovecs in use
	short bool       // the last message ends in a shorter segment: it is closed

	// The sendmmsg call's arguments and results live here, and write is
	// bound once, so handing it to Writer.Write allocates nothing.
	off, sent int
	errno     syscall.Errno
	write     func(fd uintptr) bool
}

// NewSendBatch returns a batch for up to datagrams datagrams.
func NewSendBatch(datagrams int) *SendBatch {
	b := &SendBatch{
		iovs:  make([]unix.Iovec, datagrams),
		hdrs:  make([]Hdr, datagrams),
		names: make([]Sockaddr, datagrams),
		cmsgs: controlBuffer(datagrams * cmsgSpace),
		first: make([]int, datagrams),
		segs:  make([]int, datagrams),
		bytes: make([]int, datagrams),
	}
	b.write = b.sendmmsg
	return b
}

// Len is the number of datagrams queued.
func (b *SendBatch) Len() int { return b.niov }

// Cap is the number of datagrams the batch holds.
func (b *SendBatch) Cap() int { return len(b.iovs) }

// Messages is the number of messages the queued datagrams make.
func (b *SendBatch) Messages() int { return b.n }

// Reset empties the batch.
func (b *SendBatch) Reset() { b.n, b.niov, b.short = 0, 0, false }

// Add queues p for to (nlen bytes of it, as Sockaddr.Set returned). p must
// stay untouched until Send returns. With join, p goes into the previous
// message when GSO can carry it there: the same destination, no larger
// than that message's first segment, and within the kernel's limits; the
// caller passes join false to keep datagrams apart (no GSO on this
// socket, or a boundary it wants kept). Add panics when the batch is full.
func (b *SendBatch) Add(p []byte, to *Sockaddr, nlen uint32, join bool) {
	i := b.niov
	iov := &b.iovs[i]
	iov.Base = unsafe.SliceData(p)
	iov.SetLen(len(p))
	b.niov++
	if m := b.n - 1; join && m >= 0 && !b.short && b.hdrs[m].Msghdr.Namelen == nlen && b.names[m] == *to {
		seg := int(b.iovs[b.first[m]].Len)
		if seg > 0 && len(p) <= seg && b.segs[m] < MaxGSOSegments && b.bytes[m]+len(p) <= MaxGSOBytes {
			b.segs[m]++
			b.bytes[m] += len(p)
			h := &b.hdrs[m].Msghdr
			h.SetIovlen(b.segs[m])
			if b.segs[m] == 2 {
				cm := b.cmsgs[m*cmsgSpace : (m+1)*cmsgSpace]
				ch := (*unix.Cmsghdr)(unsafe.Pointer(&cm[0]))
				ch.Level, ch.Type = unix.SOL_UDP, unix.UDP_SEGMENT
				ch.SetLen(unix.CmsgLen(2))
				binary.NativeEndian.PutUint16(cm[unix.CmsgLen(0):], uint16(seg))
				h.Control = &cm[0]
				h.SetControllen(cmsgSpace)
			}
			b.short = len(p) < seg
			return
		}
	}
	m := b.n
	b.n++
	b.names[m] = *to
	b.message(m, i, 1, nlen)
	b.short = false
}

// message makes hdrs[m] the single-segment message of iovecs[first:],
// segs long, to names[m].
func (b *SendBatch) message(m, first, segs int, nlen uint32) {
	b.first[m], b.segs[m] = first, segs
	b.bytes[m] = 0
	for _, iov := range b.iovs[first : first+segs] {
		b.bytes[m] += int(iov.Len)
	}
	h := &b.hdrs[m].Msghdr
	h.Name = &b.names[m][0]
	h.Namelen = nlen
	h.Iov = &b.iovs[first]
	h.SetIovlen(segs)
	h.Control = nil
	h.SetControllen(0)
}

// Split rewrites the messages from from on as one message per datagram,
// in place: what is left of a batch when the kernel refuses GSO. The
// number of messages only grows, so working from the last message back
// writes each slot after its old content was read.
func (b *SendBatch) Split(from int) {
	total := from
	for _, s := range b.segs[from:b.n] {
		total += s
	}
	at := total
	for m := b.n - 1; m >= from; m-- {
		first, segs := b.first[m], b.segs[m]
		name, nlen := b.names[m], b.hdrs[m].Msghdr.Namelen
		for k := segs - 1; k >= 0; k-- {
			at--
			b.names[at] = name
			b.message(at, first+k, 1, nlen)
		}
	}
	b.n = total
	b.short = false
}

// gsoRefused reports whether errno is how the kernel refuses UDP_SEGMENT
// (no GSO on the device, or a kernel without UDP GSO).
func gsoRefused(errno syscall.Errno) bool {
	return errno == syscall.EIO || errno == syscall.EINVAL || errno == syscall.EOPNOTSUPP
}

// Send hands the queued messages to the kernel with as few sendmmsg calls
// as it allows, and empties the batch. A message the kernel refuses (an
// ICMP error queued for a departed peer, say) is counted as dropped and
// skipped, so it cannot hold back the others; a refused GSO message makes
// the rest go out unsegmented (see SendResult.GSORefused). The error is
// non-nil only when w fails (the socket is closed); what was not sent is
// then counted as dropped.
func (b *SendBatch) Send(w Writer) (SendResult, error) {
	var res SendResult
	defer b.Reset()
	for b.off = 0; b.off < b.n; {
		off := b.off
		err := w.Write(b.write)
		res.Syscalls++
		if err != nil {
			for _, s := range b.segs[off:b.n] {
				res.Dropped += s
			}
			return res, err
		}
		if b.errno != 0 || b.sent <= 0 {
			if b.segs[off] > 1 && gsoRefused(b.errno) {
				res.GSORefused = true
				b.Split(off)
				continue
			}
			res.Dropped += b.segs[off]
			b.off++
			continue
		}
		for _, s := range b.segs[off : off+b.sent] {
			res.Datagrams += s
		}
		res.Messages += b.sent
		b.off += b.sent
	}
	return res, nil
}

// sendmmsg is the Writer's callback for Send.
func (b *SendBatch) sendmmsg(fd uintptr) bool {
	// RawSyscall: the socket is non-blocking, so sendmmsg never sleeps;
	// telling the scheduler about it (Syscall) would only let sysmon hand
	// the P to another thread mid-call, and on one core that costs a
	// context switch per batch.
	r, _, e := syscall.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&b.hdrs[b.off])),
		uintptr(b.n-b.off), 0, 0, 0)
	if e == syscall.EAGAIN {
		return false // the send buffer is full: wait in the netpoller
	}
	b.sent, b.errno = int(r), e
	return true
}
