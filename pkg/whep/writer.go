package whep

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/rtph264"
)

// writer is a connected session's sending side: it takes the reader's
// frames, stamps them onto the session's timeline and writes them. It
// runs in one of two ways, with the same handling of each frame:
//   - on a goroutine of its own (run), blocking for frames: the pion
//     plane, and own-plane viewers over ICE-TCP, whose writes block while
//     their link is full and so must not hold anyone else's;
//   - stepped by a writerPool (step), never blocking: own-plane viewers
//     over UDP, so a connected viewer costs no goroutine and the pool
//     sends many viewers' frames with one system call.
type writer struct {
	s    *Server
	sess *session

	st           *rtph264.Stamper
	pt           uint8
	audio        opusStamper
	pkts         []rtp.Packet
	nacked       []uint16
	videoReports senderReporter
	audioReports senderReporter
	// catchingUp lasts from attach until the writer reaches the live edge
	// (an empty queue): the cached GOP and whatever queued up while it
	// went out are all stamped as catch-up, so the browser plays them
	// quickly and then sits at the live edge instead of a GOP behind it.
	catchingUp bool
	// Sender reports start at the live edge: the clock is anchored there,
	// and catch-up video timestamps do not follow the PTS (see Stamp).
	clock     mediaClock
	videoLive bool // the last video AU went out on its PTS timeline
	// Frames are stamped from their place on the session's timeline,
	// which goes on across publishers (see timeline).
	tl timeline

	// Stepped writers only (writerPool); all but sched belong to the
	// step in progress.
	pool  *writerPool
	own   *ownTransport
	sched atomic.Int32 // writerIdle...writerDone
	// paceUntil is when the next frame may go out behind the live edge;
	// the pool's pacer wakes the writer then. pacedFor is the deadline
	// the pacer last took, so early wakes do not add more.
	paceUntil time.Time
	pacedFor  time.Time
	// held is a frame BeforeWrite holds until hold is closed.
	held     hub.Frame
	hold     <-chan struct{}
	stopWake func() bool
}

// startWriter attaches the connected session to its path and returns its
// writer; pool, when not nil, will step it (it is told of every frame
// from the first one on).
func (s *Server) startWriter(sess *session, pool *writerPool, own *ownTransport) *writer {
	w := &writer{s: s, sess: sess, catchingUp: true, pool: pool, own: own}
	// Until the caller queues it, wakes (the cached GOP arrives during
	// Attach) only mark the writer for a step: none may start before it
	// is complete.
	w.sched.Store(writerAgain)
	if pool != nil {
		sess.reader.SetWake(w.wake)
		sess.nacks.setWake(w.wake)
	}
	// Attach only now, so a viewer still in ICE never fills a queue.
	videoSSRC, audioSSRC := sess.tr.ssrcs()
	if audioSSRC != 0 {
		sess.reader.AttachAV()
	} else {
		sess.reader.Attach()
	}
	s.readerOpened(sess)
	sess.sigMu.Lock()
	pt, audioPT := sess.offer.payloadType, sess.offer.audioPT
	sess.sigMu.Unlock()
	w.pt = pt
	w.st = rtph264.NewStamper(videoSSRC, pt, uint16(mrand.Uint32()), mrand.Uint32())
	w.st.SetCatchUpStep(uint32(catchUpInterval * av.ClockRate / time.Second))
	w.audio = opusStamper{ssrc: audioSSRC, pt: audioPT, seq: uint16(mrand.Uint32()), offset: mrand.Uint32()}
	w.videoReports = senderReporter{ssrc: videoSSRC}
	w.audioReports = senderReporter{ssrc: audioSSRC}
	return w
}

// run writes access units until the session ends, and returns why it
// ended.
func (w *writer) run() error {
	sess := w.sess
	pace := time.NewTimer(0)
	defer pace.Stop()
	<-pace.C
	for {
		// Checked first because a reader may prefer queued frames over a
		// done context, and an ended session must not drain its queue.
		if sess.ctx.Err() != nil {
			return context.Cause(sess.ctx)
		}
		w.resendNACKed()
		f := w.held
		if w.hold == nil {
			// The wait ends early for a NACK, which is answered at once
			// rather than after the next frame.
			var err error
			f, err = sess.reader.RecvFrame(sess.nacks.waitCtx(sess.ctx))
			switch {
			case err == nil:
			case sess.ctx.Err() != nil:
				return context.Cause(sess.ctx)
			case errors.Is(err, hub.ErrEnded):
				return errPublisherGone
			case errors.Is(err, context.Canceled):
				continue // woken for a NACK
			default:
				return fmt.Errorf("reader: %w", err)
			}
			w.hold = w.beforeWrite()
		}
		if w.hold != nil {
			select {
			case <-w.hold:
			case <-sess.ctx.Done():
				return context.Cause(sess.ctx)
			}
		}
		w.held, w.hold = hub.Frame{}, nil
		if !w.handle(f) {
			continue
		}
		pace.Reset(catchUpInterval)
		select {
		case <-pace.C:
		case <-sess.ctx.Done():
			return context.Cause(sess.ctx)
		}
	}
}

func (w *writer) beforeWrite() <-chan struct{} {
	if w.s.cfg.BeforeWrite == nil {
		return nil
	}
	return w.s.cfg.BeforeWrite(w.sess.id)
}

func (w *writer) resendNACKed() {
	if w.nacked = w.sess.nacks.take(w.nacked); len(w.nacked) > 0 {
		w.sess.retransmit.Add(uint64(w.sess.resend(w.nacked, w.pt)))
	}
}

// handle writes frame f and reports whether the next one must wait
// catchUpInterval.
func (w *writer) handle(f hub.Frame) (pace bool) {
	sess, s := w.sess, w.s
	changes := w.tl.changes
	pts, ok := w.tl.place(f, time.Now())
	if !ok {
		return false
	}
	if w.tl.changes != changes {
		sess.log.Info("viewer continues with a new publisher")
	}
	backlog := sess.reader.Backlog()
	w.catchingUp = w.catchingUp && (f.CatchUp || backlog > 0)
	if !w.clock.set && !w.catchingUp && !f.CatchUp {
		w.clock.anchor(pts, time.Now())
	}
	if f.Audio != nil {
		// Audio goes out as it comes, between the paced video frames, so
		// the two stay interleaved in PTS order and a one-packet frame
		// adds no burst worth pacing.
		sess.sendAudio(&w.audio, f.Audio, pts, &w.audioReports, &w.clock)
		return false
	}
	au := f.Video
	live := !(f.CatchUp || w.catchingUp)
	w.pkts = w.st.StampAt(w.pkts, au, pts, !live)
	sess.history.record(au, w.pkts)
	// A write error means the transport is going away; it ends the
	// session itself, so just count what went out of this AU. A stepped
	// writer's packets are queued in its pool's batch here and leave with
	// the batch, within the same pass over the ready viewers.
	k, _ := sess.tr.writeVideo(w.pkts)
	sent, n := uint64(k), uint64(0)
	for i := range w.pkts[:k] {
		n += uint64(rtph264.HeaderLen + len(w.pkts[i].Payload))
	}
	if live && sent == uint64(len(w.pkts)) {
		s.latency.observeSent(au)
	}
	sess.packets.Add(sent)
	sess.bytes.Add(n)
	sess.reader.CountSent(int(sent), int(n))
	w.videoReports.sent(sent, n-sent*rtph264.HeaderLen)
	if len(w.pkts) > 0 {
		w.videoLive = live
	}
	if sent > 0 && w.videoLive && w.clock.set {
		w.videoReports.maybeSend(sess.tr, time.Now(), w.st.LastTimestamp(), w.clock.at(pts))
	}
	// Behind the live edge (catch-up, or frames queued during a stall),
	// space frames out instead of bursting a whole queue at line rate: a
	// burst of hundreds of packets overflows socket and router buffers,
	// and the viewer would lose the very frames it waits for.
	return f.CatchUp || w.catchingUp || backlog > 1
}

// stepFrames bounds one step's frames, so a viewer with a long backlog
// (there is none behind the live edge: those are paced) cannot hold up the
// others in its batch.
const stepFrames = 8

// step writes what the session may write now without waiting, and reports
// whether the writer left the pool: the session ended (its end runs on a
// goroutine of its own) or moved to ICE-TCP (its writer goes on as run).
// It runs on one pool worker at a time (see writerPool).
func (w *writer) step() (left bool) {
	sess := w.sess
	if sess.ctx.Err() != nil {
		w.leave(context.Cause(sess.ctx))
		return true
	}
	if w.own.v.OverTCP() {
		// An ICE restart moved the viewer to ICE-TCP, whose writes block:
		// it gets a goroutine of its own from here on.
		w.leave(nil)
		return true
	}
	w.resendNACKed()
	if w.hold != nil {
		select {
		case <-w.hold:
		default:
			return false // the hold's watcher wakes the writer
		}
		w.hold = nil
		if w.handle(w.held) {
			w.held = hub.Frame{}
			w.paceFor(catchUpInterval)
			return false
		}
		w.held = hub.Frame{}
	}
	if time.Now().Before(w.paceUntil) {
		w.paceFor(0)
		return false
	}
	for range stepFrames {
		f, ok, err := sess.reader.Poll()
		switch {
		case errors.Is(err, hub.ErrEnded):
			w.leave(errPublisherGone)
			return true
		case err != nil:
			w.leave(fmt.Errorf("reader: %w", err))
			return true
		case !ok:
			return false // the reader wakes the writer
		}
		if hold := w.beforeWrite(); hold != nil {
			w.held, w.hold = f, hold
			go w.watchHold(hold) // tests only (BeforeWrite)
			return false
		}
		if w.handle(f) {
			w.paceFor(catchUpInterval)
			return false
		}
	}
	w.sched.CompareAndSwap(writerRunning, writerAgain) // more may be queued
	return false
}

// paceFor holds the writer's frames for d from now (0: until the
// deadline already set) and has the pool's pacer wake it then; a wake
// before that finds the writer paced and leaves it.
func (w *writer) paceFor(d time.Duration) {
	if d > 0 {
		w.paceUntil = time.Now().Add(d)
	}
	if !w.pacedFor.Equal(w.paceUntil) {
		w.pacedFor = w.paceUntil
		w.pool.pacer.wakeAt(w, w.paceUntil)
	}
}

func (w *writer) watchHold(hold <-chan struct{}) {
	select {
	case <-hold:
	case <-w.sess.ctx.Done():
	}
	w.wake()
}

// leave takes the writer out of its pool for good: with reason, the
// session has ended and its end runs on a new goroutine (it closes the
// transport, which may wait on a link); without, the writer goes on as
// run on a goroutine of its own. Either goroutine is the session's, still
// counted in s.wg since runSession handed it to the pool.
func (w *writer) leave(reason error) {
	// A wake the pacer still holds finds the writer done and is lost.
	w.sched.Store(writerDone)
	w.stopWake()
	w.own.batch = nil // the worker's Sender is not the goroutine's
	if reason != nil {
		go w.s.endSession(w.sess, reason)
		return
	}
	w.own = nil
	go func() { w.s.endSession(w.sess, w.run()) }()
}

// wake asks the pool to step the writer; it never blocks. Readers call it
// for every frame they queue, the NACK box for every NACK, the pacer when
// a wait ends, and the session's context once, when it ends.
func (w *writer) wake() {
	for {
		switch st := w.sched.Load(); st {
		case writerIdle:
			if w.sched.CompareAndSwap(writerIdle, writerQueued) {
				w.pool.enqueue(w)
				return
			}
		case writerRunning:
			if w.sched.CompareAndSwap(writerRunning, writerAgain) {
				return
			}
		default: // already queued, or stepped again after this step, or gone
			return
		}
	}
}
