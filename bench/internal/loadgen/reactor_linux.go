package loadgen

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/srtwhep/srtwhep/internal/mmsg"
)

// Receive geometry. A 720p frame at 2.5 Mbit/s is ~10 packets, so one
// recvmmsg usually drains what a socket got since the last round. Buffers
// exceed anything a WebRTC peer sends (pion's DTLS MTU is 1200); a longer
// datagram is reported truncated and dropped.
const (
	batchLen     = 8
	datagramSize = 2048
	// messageSize holds one UDP GRO message: the kernel hands a socket with
	// UDP_GRO a sender's GSO run (a frame's packets) as one buffer, which
	// costs the generator one message instead of ten.
	messageSize  = 65536
	maxEvents    = 256
	passQueueLen = 256 // datagrams waiting for pion per light session (no media)
	// decodeQueueLen holds a join's catch-up burst (the server sends its
	// cached GOP at once, ~600 packets) for a decoding session's pion
	// while a busy generator gets to it.
	decodeQueueLen = 2048
	// socketBuffer holds a keyframe burst (~100 packets of ~2 KiB kernel
	// truesize each) while the reactor sleeps between rounds.
	socketBuffer = 2 << 20
	// rtcpQueueLen bounds the feedback waiting for the RTCP sender: a
	// second of reports from 1,000 viewers and then some.
	rtcpQueueLen = 4096
	// sweepEvery is how often every viewer is checked for a report or a
	// NACK retry that is due, whether or not its socket had data.
	sweepEvery = 100 * time.Millisecond
)

// DefaultPace is the reactor's sleep between receive rounds: long enough
// that each socket has a few packets waiting (one system call for several
// packets, one wake-up for all sessions), short against a 33 ms frame.
const DefaultPace = 5 * time.Millisecond

// reactor receives for every session of a pool on one goroutine: epoll
// over all sockets, recvmmsg per ready socket, a short sleep between
// rounds. Per-session goroutines woken per packet would cost the
// generator as much as the server spends sending, which would make the
// measurement worthless. Media is counted here and dropped (light mode);
// what pion must see is queued to the session's mux.
type reactor struct {
	epfd   int
	pace   time.Duration
	gro    bool // UDP_GRO on new sockets
	rcvbuf int  // SO_RCVBUF of connected sockets, bytes; 0 keeps socketBuffer

	// rtcp carries feedback to the goroutine that sends it through pion.
	rtcp     chan rtcpJob
	rtcpDone chan struct{}
	// nextSweep is owned by the run goroutine.
	nextSweep int64

	mu    sync.RWMutex // write-held to add or remove a socket
	socks map[int32]*rsock

	closed atomic.Bool
	done   chan struct{}

	// Owned by the run goroutine.
	events [maxEvents]unix.EpollEvent
	rx     *mmsg.RecvBatch // batchLen messages of messageSize, 64 control bytes each
	pool   sync.Pool       // *[]byte of datagramSize for datagrams handed to pion
}

func newReactor(pace time.Duration, gro bool, rcvbuf int) (*reactor, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("loadgen: epoll_create1: %w", err)
	}
	r := &reactor{
		epfd:     epfd,
		pace:     pace,
		gro:      gro,
		rcvbuf:   rcvbuf,
		rtcp:     make(chan rtcpJob, rtcpQueueLen),
		rtcpDone: make(chan struct{}),
		socks:    map[int32]*rsock{},
		done:     make(chan struct{}),
		// Control room for a UDP_GRO segment size and an
		// SCM_TIMESTAMPNS time, with some to spare.
		rx: mmsg.NewRecvBatch(batchLen, messageSize, 64),
	}
	r.pool.New = func() any { b := make([]byte, datagramSize); return &b }
	go r.run()
	go func() {
		defer close(r.rtcpDone)
		sendRTCP(r.rtcp)
	}()
	return r, nil
}

func (r *reactor) run() {
	// Only this goroutine sends on rtcp, so it closes it on the way out.
	defer close(r.done)
	defer close(r.rtcp)
	for !r.closed.Load() {
		// The timeout bounds how long Close waits for this loop.
		n, err := unix.EpollWait(r.epfd, r.events[:], 100)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		r.mu.RLock()
		now := time.Now().UnixNano()
		for i := 0; i < n; i++ {
			if s := r.socks[r.events[i].Fd]; s != nil {
				r.drain(s, now)
				r.feedback(s, now)
			}
		}
		if now >= r.nextSweep {
			for _, s := range r.socks {
				r.feedback(s, now)
			}
			r.nextSweep = now + int64(sweepEvery)
		}
		r.mu.RUnlock()
		if n > 0 && r.pace > 0 {
			time.Sleep(r.pace)
		}
	}
}

// drain reads what s has queued. Called with mu read-held, so s stays
// registered and its fd open.
func (r *reactor) drain(s *rsock, now int64) {
	for {
		n, e := r.rx.RecvFD(s.fd)
		if e != 0 || n == 0 {
			return // EAGAIN: drained; other errors surface as a silent session
		}
		for i := 0; i < n; i++ {
			if r.rx.Truncated(i) {
				s.acc.c.others.Add(1)
				continue
			}
			msg := r.rx.Data(i)
			seg, at := controlInfo(r.rx.Control(i))
			if seg <= 0 || seg > len(msg) {
				seg = len(msg)
			}
			if at == 0 {
				at = now
			}
			// A GRO message is a run of datagrams of seg bytes (the last
			// may be shorter), each one as the peer sent it.
			for off := 0; off < len(msg); off += seg {
				p := msg[off:min(off+seg, len(msg))]
				r.deliver(s, i, p, at)
			}
		}
		if n < batchLen {
			return
		}
	}
}

// deliver counts one datagram and queues what pion must see.
func (r *reactor) deliver(s *rsock, i int, p []byte, now int64) {
	if len(p) > datagramSize {
		s.acc.c.others.Add(1)
		return
	}
	if !s.acc.inspect(p, now) {
		return
	}
	from, ok := r.rx.Addr(i)
	if !ok {
		return
	}
	b := r.pool.Get().(*[]byte)
	select {
	case s.in <- dgram{buf: b, n: copy(*b, p), from: from}:
	default:
		r.pool.Put(b)
		s.acc.c.passDrops.Add(1)
	}
}

// feedback hands the RTCP a light viewer sends now, if any, to the sender
// goroutine; a full queue drops it rather than stall the receive loop.
func (r *reactor) feedback(s *rsock, now int64) {
	if s.acc.fb == nil {
		return
	}
	pkts := s.acc.collect(now)
	if len(pkts) == 0 {
		return
	}
	select {
	case r.rtcp <- rtcpJob{acc: s.acc, pkts: pkts}:
	default:
		s.acc.c.rtcpUnsent.Add(1)
	}
}

// controlInfo returns the segment size of a UDP_GRO control message (0
// without one) and the kernel's receive time from SCM_TIMESTAMPNS (unix
// ns, 0 without one). It walks the control buffer in place: this runs for
// every message.
func controlInfo(oob []byte) (seg int, at int64) {
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(oob) {
			return seg, at
		}
		data := oob[unix.CmsgLen(0):l]
		switch {
		case h.Level == unix.SOL_UDP && h.Type == unix.UDP_GRO:
			switch {
			case len(data) >= 4:
				seg = int(binary.NativeEndian.Uint32(data))
			case len(data) >= 2:
				seg = int(binary.NativeEndian.Uint16(data))
			}
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && len(data) >= int(unsafe.Sizeof(unix.Timespec{})):
			ts := (*unix.Timespec)(unsafe.Pointer(&data[0]))
			at = ts.Nano()
		}
		next := unix.CmsgSpace(l - unix.CmsgLen(0))
		if next > len(oob) {
			return seg, at
		}
		oob = oob[next:]
	}
	return seg, at
}

// Close stops the loop; sockets must be closed first.
func (r *reactor) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	<-r.done
	<-r.rtcpDone
	return unix.Close(r.epfd)
}
