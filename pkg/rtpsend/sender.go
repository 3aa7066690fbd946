// Package rtpsend is one viewer's RTP sender: it takes the frames of the
// viewer's hub reader, places them on the viewer's timeline across
// publishers (hub.Timeline), stamps them (pkg/rtpstamp's Stamper for video,
// the Opus stamper for audio), answers NACKs from the shared-payload
// history (retransmit.go), sends sender reports on one media clock
// (senderreport.go), applies the congestion rule to receiver reports
// (congestion.go) and measures the server's share of the latency
// (latency.go), writing through a three-method Output.
//
// It has one execution model: a Sender is a plane.Stepper. Step writes
// what may go out now and never waits on anything but its Output; it says
// when it wants to run again, and wakes whoever drives it when a frame or
// a NACK arrives. The media plane decides where it runs: the own plane's
// writer pool steps UDP viewers' senders, so a viewer costs no goroutine
// and many viewers' frames leave in one sendmmsg; plane.Run steps it on a
// goroutine of its own where writes block (ICE-TCP).
package rtpsend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// Output is where a Sender writes: the viewer's connection, three
// methods (plane.Output).
type Output = plane.Output

// Source is the viewer's reader of its path (*hub.Reader).
type Source interface {
	// Poll returns the next queued frame without waiting; ok is false
	// when there is none, and err is hub.ErrEnded once the path ended.
	Poll() (f hub.Frame, ok bool, err error)
	// SetWake sets what the reader calls for every frame it queues.
	SetWake(wake func())
	// Backlog is how many frames wait; above zero the viewer is behind
	// the live edge.
	Backlog() int
	// CountSent adds what went on the wire to the path's totals.
	CountSent(packets, bytes int)
}

// ErrPublisherGone is why a sender ends when its path ended.
var ErrPublisherGone = errors.New("publisher gone")

// catchUpInterval spaces frames sent behind the live edge: about four times
// a 30 fps frame rate, so a cached 2 s GOP plays out in half a second
// without a burst that receivers' buffers would drop.
const catchUpInterval = 8 * time.Millisecond

// Config is one viewer's sender.
type Config struct {
	Out Output
	Src Source
	// VideoSSRC and AudioSSRC are the connection's; AudioSSRC is 0
	// without audio. VideoPT and AudioPT are the offer's.
	VideoSSRC, AudioSSRC uint32
	VideoPT, AudioPT     uint8
	// Session is the viewer's session: once it ends, the sender finishes
	// with its cause.
	Session context.Context
	Log     *slog.Logger
	// Latency, when set, observes every live picture sent whole.
	Latency *Latency
	// BeforeWrite, when set, is asked before each frame; a non-nil
	// channel holds the frame until it is closed (integration tests stall
	// one viewer with it).
	BeforeWrite func() <-chan struct{}
	// OnEnd is told once, from Step, why the sender finished; it must not
	// block.
	OnEnd func(reason error)
	// Resends is the server-wide retransmission budget and its counters
	// (budget.go), shared by every viewer; nil: this viewer's own budget
	// only.
	Resends *Resends
	// TransportCC is the transport-wide sequence number extension's ID
	// the answer negotiated (sdpoffer.TransportCC), 0 for none; with
	// TransportCCAudio the audio packets carry it too (estimate.go).
	TransportCC      uint8
	TransportCCAudio bool
}

// Sender is one viewer's sending side. Step and SetWake belong to whoever
// drives it (one goroutine at a time), OnRTCP to the connection's RTCP
// reader; the counters may be read from anywhere.
type Sender struct {
	cfg Config

	st           *rtpstamp.Stamper
	audio        opusStamper
	audioOne     [1]rtp.Packet // an audio packet being stamped
	pkts         []rtp.Packet
	nacked       []uint16
	resendBuf    []rtp.Packet
	videoReports senderReporter
	audioReports senderReporter
	// catchingUp lasts from the start until the sender reaches the live
	// edge (an empty queue): the cached GOP and whatever queued up while
	// it went out are all stamped as catch-up, so the browser plays them
	// quickly and then sits at the live edge instead of a GOP behind it.
	catchingUp bool
	// Sender reports start at the live edge: the clock is anchored there,
	// and catch-up video timestamps do not follow the PTS (see Stamp).
	clock     mediaClock
	videoLive bool // the last video AU went out on its PTS timeline
	// Frames are stamped from their place on the viewer's timeline,
	// which goes on across publishers.
	tl hub.Timeline

	// paceUntil is when the next frame may go out behind the live edge;
	// Step asks to run again then.
	paceUntil time.Time
	// held is a frame BeforeWrite holds until hold is closed.
	held     hub.Frame
	hold     <-chan struct{}
	wake     func()
	stopWake func() bool

	// history answers NACKs from the shared payloads (see retransmit.go);
	// nacks carries them from the RTCP reader to Step.
	history history
	nacks   nackBox
	// budget bounds what NACKs get resent (budget.go); Step's alone. rtt
	// is the viewer's round trip, from its receiver reports. epoch is
	// the sender's start, for the history's resend stamps.
	budget  resendBudget
	rtt     rttClock
	resends *Resends
	epoch   time.Time
	dropped uint64 // NACKed packets Step did not resend
	// now is OnRTCP's time.Now (unit tests run a simulated one).
	now func() time.Time
	// congestion is the rule that skips a viewer's video to the next IDR
	// when its link loses too much (congestion.go); OnRTCP's alone.
	congestion congestion
	// est is the viewer's bandwidth estimate and, with transport-cc,
	// the packets' transport-wide numbers (estimate.go).
	est *estimator
	// probe sends the probe clusters the viewer's switch asks for
	// (probe.go).
	probe prober

	packets, bytes, retransmit atomic.Uint64
}

// New makes the sender; it starts nothing and reads nothing until its
// driver steps it.
func New(cfg Config) *Sender {
	w := &Sender{cfg: cfg, catchingUp: true, resends: cfg.Resends, epoch: time.Now(), now: time.Now}
	w.est = newEstimator(cfg.TransportCC, cfg.TransportCCAudio, w.epoch)
	if w.resends == nil {
		w.resends = &Resends{}
	}
	w.st = rtpstamp.NewStamper(cfg.VideoSSRC, cfg.VideoPT, uint16(mrand.Uint32()), mrand.Uint32())
	w.st.SetCatchUpStep(uint32(catchUpInterval * av.ClockRate / time.Second))
	w.audio = opusStamper{ssrc: cfg.AudioSSRC, pt: cfg.AudioPT, seq: uint16(mrand.Uint32()), offset: mrand.Uint32()}
	w.videoReports = senderReporter{ssrc: cfg.VideoSSRC}
	w.audioReports = senderReporter{ssrc: cfg.AudioSSRC}
	return w
}

// Sent is what the sender put on the wire: RTP packets and their bytes,
// headers included.
func (w *Sender) Sent() (packets, bytes uint64) { return w.packets.Load(), w.bytes.Load() }

// Retransmitted counts the packets resent on NACKs.
func (w *Sender) Retransmitted() uint64 { return w.retransmit.Load() }

// NotResent counts the NACKed packets not resent: past the viewer's or
// the server's budget, asked for again within a round trip, or gone from
// the history. Read it once the sender has finished.
func (w *Sender) NotResent() uint64 { return w.dropped + w.nacks.refused.Load() }

// CongestionSkips counts the congestion rule's skips to the next IDR; read
// it once the connection delivers no more RTCP.
func (w *Sender) CongestionSkips() uint64 { return w.congestion.skips }

// SetWake is told by the driver how to ask for a Step: the reader calls it
// for every frame it queues, the NACK box for every NACK, and the
// session's context once, when it ends. A driver that takes over (the own
// plane's, when a viewer moves to ICE-TCP) replaces the one before.
func (w *Sender) SetWake(wake func()) {
	if w.stopWake != nil {
		w.stopWake()
	}
	w.wake = wake
	w.cfg.Src.SetWake(wake)
	w.nacks.setWake(wake)
	w.stopWake = context.AfterFunc(w.cfg.Session, wake)
}

func (w *Sender) beforeWrite() <-chan struct{} {
	if w.cfg.BeforeWrite == nil {
		return nil
	}
	return w.cfg.BeforeWrite()
}

func (w *Sender) resendNACKed(now time.Time) {
	if w.nacked = w.nacks.take(w.nacked); len(w.nacked) == 0 {
		return
	}
	sent, dropped := w.resend(w.nacked, now)
	w.retransmit.Add(uint64(sent))
	w.dropped += dropped
	w.resends.dropped.Add(dropped)
	total := w.NotResent()
	if total == w.budget.loggedDropped || now.Sub(w.budget.loggedAt) < budgetLogEvery {
		return
	}
	w.cfg.Log.Warn("viewer asks for more retransmissions than its budget: NACKed packets not resent",
		"not_resent", total-w.budget.loggedDropped, "budget_bytes_per_second", w.budget.allowance()+w.budget.resent)
	w.budget.loggedAt, w.budget.loggedDropped = now, total
}

// handle writes frame f and reports whether the next one must wait
// catchUpInterval.
func (w *Sender) handle(f hub.Frame, now time.Time) (pace bool) {
	changes := w.tl.Changes()
	pts, _, ok := w.tl.Place(f, now)
	if !ok {
		return false
	}
	if w.tl.Changes() != changes {
		w.cfg.Log.Info("viewer continues with a new publisher")
	}
	backlog := w.cfg.Src.Backlog()
	w.catchingUp = w.catchingUp && (f.CatchUp || backlog > 0)
	if !w.clock.set && !w.catchingUp && !f.CatchUp {
		w.clock.anchor(pts, now)
	}
	if f.Audio != nil {
		// Audio goes out as it comes, between the paced video frames, so
		// the two stay interleaved in PTS order and a one-packet frame
		// adds no burst worth pacing.
		w.sendAudio(f.Audio, pts, now)
		return false
	}
	au := f.Video
	live := !(f.CatchUp || w.catchingUp)
	w.pkts = w.st.StampAt(w.pkts, au, pts, !live)
	w.history.record(au, w.pkts)
	w.est.stamp(w.pkts, now)
	// A write error means the connection is going away, which ends the
	// session by itself, so just count what went out of this AU. On the
	// own plane's pool the packets are queued in the worker's batch here
	// and leave with it, within the same pass over the ready viewers.
	k, _ := w.cfg.Out.WriteVideo(w.pkts)
	sent, n := uint64(k), uint64(0)
	hdr := uint64(w.est.headerLen(false))
	for i := range w.pkts[:k] {
		n += hdr + uint64(len(w.pkts[i].Payload))
	}
	if live && sent == uint64(len(w.pkts)) && w.cfg.Latency != nil {
		w.cfg.Latency.observeSent(au)
	}
	w.packets.Add(sent)
	w.bytes.Add(n)
	w.budget.roll(now)
	w.budget.sent += int64(n)
	w.cfg.Src.CountSent(int(sent), int(n))
	w.videoReports.sent(sent, n-sent*hdr)
	if len(w.pkts) > 0 {
		w.videoLive = live
	}
	if sent > 0 && w.videoLive && w.clock.set {
		if ntp, ok := w.videoReports.maybeSend(w.cfg.Out, now, w.st.LastTimestamp(), w.clock.at(pts)); ok {
			w.rtt.sentReport(ntp, now)
		}
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

// Step writes what the viewer may get now without waiting (plane.
// Stepper). It reports done once the session has ended or its path has,
// after telling OnEnd why. Otherwise at is when it wants to run again
// without a wake: zero when only a wake brings work, the pace deadline
// behind the live edge, now when more frames may be queued.
func (w *Sender) Step(now time.Time) (at time.Time, done bool) {
	// Checked first because an ended session must not drain its queue.
	if w.cfg.Session.Err() != nil {
		return w.finish(context.Cause(w.cfg.Session))
	}
	w.sendProbe(now)
	at, done = w.step(now)
	if done {
		return at, done
	}
	// A cluster asked for during the step (the switch asks from its
	// source's Poll) starts now; one under way wants its next packet on
	// time.
	if next := w.sendProbe(now); !next.IsZero() && (at.IsZero() || next.Before(at)) {
		at = next
	}
	return at, false
}

func (w *Sender) step(now time.Time) (at time.Time, done bool) {
	w.resendNACKed(now)
	if w.hold != nil {
		select {
		case <-w.hold:
		default:
			return time.Time{}, false // the hold's watcher wakes the sender
		}
		f := w.held
		w.held, w.hold = hub.Frame{}, nil
		if w.handle(f, now) {
			return w.pace(now), false
		}
	}
	if now.Before(w.paceUntil) {
		return w.paceUntil, false
	}
	for range stepFrames {
		f, ok, err := w.cfg.Src.Poll()
		switch {
		case errors.Is(err, hub.ErrEnded):
			return w.finish(ErrPublisherGone)
		case err != nil:
			return w.finish(fmt.Errorf("reader: %w", err))
		case !ok:
			return time.Time{}, false // the reader wakes the sender
		}
		if hold := w.beforeWrite(); hold != nil {
			w.held, w.hold = f, hold
			go w.watchHold(hold, w.wake) // tests only (BeforeWrite)
			return time.Time{}, false
		}
		if w.handle(f, now) {
			return w.pace(now), false
		}
	}
	return now, false // more may be queued
}

// pace holds the sender's frames for catchUpInterval from now.
func (w *Sender) pace(now time.Time) time.Time {
	w.paceUntil = now.Add(catchUpInterval)
	return w.paceUntil
}

func (w *Sender) watchHold(hold <-chan struct{}, wake func()) {
	select {
	case <-hold:
	case <-w.cfg.Session.Done():
	}
	wake()
}

// finish ends the sender for good and tells OnEnd why.
func (w *Sender) finish(reason error) (time.Time, bool) {
	w.stopWake()
	w.cfg.OnEnd(reason)
	return time.Time{}, true
}
