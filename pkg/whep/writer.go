package whep

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/rtph264"
)

// writer is a connected session's sending side: it takes the reader's
// frames, stamps them onto the session's timeline and writes them. It has
// one execution model, a plane.Stepper: Step writes what may go out now
// and never waits, and the connection's plane decides where it runs (on
// the own plane's writer pool for UDP viewers, so a viewer costs no
// goroutine and the pool sends many viewers' frames with one system call;
// on a goroutine of its own, plane.Run, where writes block).
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

	// paceUntil is when the next frame may go out behind the live edge;
	// Step asks to run again then.
	paceUntil time.Time
	// held is a frame BeforeWrite holds until hold is closed.
	held     hub.Frame
	hold     <-chan struct{}
	wake     func()
	stopWake func() bool
}

// startWriter attaches the connected session to its path and returns its
// writer, for the connection to drive.
func (s *Server) startWriter(sess *session) *writer {
	w := &writer{s: s, sess: sess, catchingUp: true}
	// Attach only now, so a viewer still in ICE never fills a queue. What
	// the attach queues (the cached GOP) waits for the first Step, which
	// every driver runs at once.
	videoSSRC, audioSSRC := sess.tr.SSRCs()
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

// SetWake is told by the driver how to ask for a Step: the reader calls it
// for every frame it queues, the NACK box for every NACK, and the
// session's context once, when it ends. A driver that takes over (the own
// plane's, when a viewer moves to ICE-TCP) replaces the one before.
func (w *writer) SetWake(wake func()) {
	if w.stopWake != nil {
		w.stopWake()
	}
	w.wake = wake
	w.sess.reader.SetWake(wake)
	w.sess.nacks.setWake(wake)
	w.stopWake = context.AfterFunc(w.sess.ctx, wake)
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
	// A write error means the connection is going away; it ends the
	// session itself, so just count what went out of this AU. On the own
	// plane's pool the packets are queued in the worker's batch here and
	// leave with it, within the same pass over the ready viewers.
	k, _ := sess.tr.WriteVideo(w.pkts)
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

// Step writes what the session may write now without waiting (plane.
// Stepper). It reports done once the session has ended; its end then runs
// on a goroutine of its own (it closes the connection, which may wait on
// a link). Otherwise at is when it wants to run again without a wake:
// zero when only a wake brings work, the pace deadline behind the live
// edge, now when more frames may be queued.
func (w *writer) Step() (at time.Time, done bool) {
	sess := w.sess
	// Checked first because an ended session must not drain its queue.
	if sess.ctx.Err() != nil {
		return w.finish(context.Cause(sess.ctx))
	}
	w.resendNACKed()
	if w.hold != nil {
		select {
		case <-w.hold:
		default:
			return time.Time{}, false // the hold's watcher wakes the writer
		}
		f := w.held
		w.held, w.hold = hub.Frame{}, nil
		if w.handle(f) {
			return w.pace(), false
		}
	}
	if time.Now().Before(w.paceUntil) {
		return w.paceUntil, false
	}
	for range stepFrames {
		f, ok, err := sess.reader.Poll()
		switch {
		case errors.Is(err, hub.ErrEnded):
			return w.finish(errPublisherGone)
		case err != nil:
			return w.finish(fmt.Errorf("reader: %w", err))
		case !ok:
			return time.Time{}, false // the reader wakes the writer
		}
		if hold := w.beforeWrite(); hold != nil {
			w.held, w.hold = f, hold
			go w.watchHold(hold, w.wake) // tests only (BeforeWrite)
			return time.Time{}, false
		}
		if w.handle(f) {
			return w.pace(), false
		}
	}
	return time.Now(), false // more may be queued
}

// pace holds the writer's frames for catchUpInterval from now.
func (w *writer) pace() time.Time {
	w.paceUntil = time.Now().Add(catchUpInterval)
	return w.paceUntil
}

func (w *writer) watchHold(hold <-chan struct{}, wake func()) {
	select {
	case <-hold:
	case <-w.sess.ctx.Done():
	}
	wake()
}

// finish ends the writer for good and the session with reason, on a new
// goroutine: still the session's, counted in s.wg since runSession.
func (w *writer) finish(reason error) (time.Time, bool) {
	w.stopWake()
	go w.s.endSession(w.sess, reason)
	return time.Time{}, true
}
