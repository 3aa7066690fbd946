package abr

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/pkg/bwe"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// Reader is one hub reader as the switch uses it (*hub.Reader).
type Reader interface {
	Poll() (f hub.Frame, ok bool, err error)
	SetWake(wake func())
	Backlog() int
	CountSent(packets, bytes int)
}

// RungReader is a rung's reader, which the switch opens, attaches and
// closes itself.
type RungReader interface {
	Reader
	SkipToIDR()
	Attach()
	Close()
}

// idrSkipper is a main reader that can skip to the next IDR (hub.Reader).
type idrSkipper interface{ SkipToIDR() }

// Config is one viewer's switch.
type Config struct {
	// Main is the viewer's reader of the path, attached by its owner: the
	// source's video and the audio, which never switches.
	Main Reader
	// Rungs is the path's ladder, the source first (hub.Ladder).
	Rungs []hub.Rung
	// Refresh, when set, reads the path's ladder again (hub.Ladder): asked
	// while the switch has none (a viewer that came before the ladder
	// was planned, at the end of the stream's first GOP) and after a new
	// publisher took the path on (its ladder is its own).
	Refresh func() []hub.Rung
	// Open adds a reader of rung id (hub.Hub.AddLadderReader): asking
	// for it is what starts the rung's transcoder.
	Open func(id string) (RungReader, error)
	// RequestIDR asks rung id's transcoder for an IDR after PTS after
	// (hub.Hub.RequestLadderIDR), so a viewer moving onto it need not
	// wait for the source's next one.
	RequestIDR func(id string, after int64)
	// Switches counts the switches, by direction; nil: not counted.
	Switches *Counters
	Log      *slog.Logger
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
}

// Counters are the switches of every viewer, for the metrics.
type Counters struct{ Up, Down atomic.Uint64 }

// Tuning of the moves.
var (
	// EvaluateEvery spaces the policy's decisions.
	EvaluateEvery = 250 * time.Millisecond
	// MoveTimeout gives up a move whose rung sent no usable IDR by then
	// (its transcode was refused, or it is starting slowly).
	MoveTimeout = 3 * time.Second
)

// Switch is a rtpsend.Source over a viewer's main reader and the rung it
// is moved to. Poll, Backlog and CountSent belong to the viewer's
// sender's driver; Layers, Pin and SkipToIDR may come from anywhere.
type Switch struct {
	cfg Config

	mu       sync.Mutex
	rungs    []hub.Rung // the ladder; the viewer stays on the source while it has fewer than 2
	policy   *Policy
	estimate func() (bwe.Estimate, time.Time)
	prober   Prober
	wake     func()
	active   int        // the rung whose video the viewer gets
	rung     RungReader // active's reader when it is a rung
	// A move in progress: its target, when it began, its reader (nil for
	// the source), and, once the target runs, since when the viewer's
	// video is held at last to take the target's IDR after it.
	target  int
	moving  bool
	movedAt time.Time
	next    RungReader
	hold    bool
	heldAt  time.Time
	// last is the PTS of the last video frame handed out: a move takes an
	// IDR after it, never before. gen is the main reader's generation.
	last     int64
	haveLast bool
	gen      uint32
	// needIDR: the source's video waits for its next IDR (after a move
	// away from it that failed).
	needIDR   bool
	evaluated time.Time
	// sentBytes counts what the viewer's sender wrote (CountSent);
	// samples of it, one per evaluation, give the rate it is sent.
	sentBytes  atomic.Uint64
	samples    [12]sample
	sampleNext int
}

// New makes the switch, with the viewer on the source.
func New(cfg Config) *Switch {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &Switch{cfg: cfg, policy: NewPolicy(nil, cfg.Now())}
	s.setRungs(cfg.Rungs, cfg.Now())
	return s
}

// setRungs takes the path's ladder: a fresh policy, which keeps the pin.
func (s *Switch) setRungs(rungs []hub.Rung, now time.Time) {
	rates := make([]int, len(rungs))
	for i, r := range rungs {
		rates[i] = r.Bitrate
	}
	pin := s.policy.Pinned()
	s.rungs, s.policy = rungs, NewPolicy(rates, now)
	if pin >= 0 && len(rungs) > 0 {
		s.policy.Pin(min(pin, len(rungs)-1), now)
	}
}

// SetEstimate gives the switch the viewer's bandwidth estimate and the
// sender's start (rtpsend.Sender.Estimate, Started).
func (s *Switch) SetEstimate(f func() (bwe.Estimate, time.Time)) {
	s.mu.Lock()
	s.estimate = f
	s.mu.Unlock()
}

// Prober sends the viewer probe clusters (*rtpsend.Sender): a move up
// waits for one that shows the link carries the rung above.
type Prober interface {
	// Probe asks for a cluster at bps bit/s; false: not now.
	Probe(bps int) bool
	// ProbeResult is the last cluster's result, once it is in.
	ProbeResult() (bwe.ProbeResult, bool)
}

// SetProber gives the switch the viewer's sender as its prober.
func (s *Switch) SetProber(p Prober) {
	s.mu.Lock()
	s.prober = p
	s.mu.Unlock()
}

// SetWake sets what every reader the switch reads calls for a frame.
func (s *Switch) SetWake(wake func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wake = wake
	s.cfg.Main.SetWake(wake)
	for _, r := range []RungReader{s.rung, s.next} {
		if r != nil {
			r.SetWake(wake)
		}
	}
}

// Backlog is what waits in the readers the viewer's video comes from.
func (s *Switch) Backlog() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.cfg.Main.Backlog()
	if s.rung != nil {
		n += s.rung.Backlog()
	}
	return n
}

// CountSent adds to the path's totals.
func (s *Switch) CountSent(packets, bytes int) {
	s.sentBytes.Add(uint64(bytes))
	s.cfg.Main.CountSent(packets, bytes)
}

// SkipToIDR drops the viewer's video up to the next IDR of the rung it
// gets (the congestion rule, for a link that loses even the lowest).
func (s *Switch) SkipToIDR() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rung != nil {
		s.rung.SkipToIDR()
		return
	}
	if sk, ok := s.cfg.Main.(idrSkipper); ok {
		sk.SkipToIDR()
	}
}

// Close closes the rung readers the switch opened (not Main).
func (s *Switch) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range []RungReader{s.rung, s.next} {
		if r != nil {
			r.Close()
		}
	}
	s.rung, s.next = nil, nil
}

// newGeneration: a new publisher continues the path. Its rungs are new
// ones, so the viewer goes back to the source, which the timeline
// continues at its first IDR.
func (s *Switch) newGeneration(gen uint32) {
	s.gen = gen
	s.haveLast = false
	s.cancelMove()
	if s.rung != nil {
		s.rung.Close()
		s.rung, s.active = nil, 0
		s.policy.Failed(0, s.cfg.Now())
	}
	s.needIDR = false // the timeline waits for the new publisher's IDR itself
	if s.cfg.Refresh != nil {
		s.setRungs(nil, s.cfg.Now()) // read again once the new publisher has planned its own
	}
}

// State is the ladder as the switch knows it (the source first; fewer
// than 2 rungs while the path has none), the rung the viewer gets and
// the pinned one (-1: none).
func (s *Switch) State() (rungs []hub.Rung, active, pinned int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rungs, s.active, s.policy.Pinned()
}

// Pin fixes the viewer on rung i from its next move on (-1: its estimate
// chooses again); asking for a rung starts its transcoder.
func (s *Switch) Pin(i int) {
	s.mu.Lock()
	if i >= len(s.rungs) {
		i = len(s.rungs) - 1
	}
	s.policy.Pin(i, s.cfg.Now())
	s.evaluated = time.Time{} // at the next Poll
	wake := s.wake
	s.mu.Unlock()
	if wake != nil {
		wake()
	}
}
