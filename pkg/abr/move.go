package abr

import (
	"errors"
	"time"

	"github.com/srtwhep/srtwhep/pkg/bwe"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// How a viewer moves: down (or onto any rung) it opens the rung's reader,
// which starts the rung's transcoder if nobody watched it; once the rung
// delivers, the viewer's video is held at the last picture sent and the
// rung is asked for an IDR after it (hub.RequestLadderIDR), which comes
// within the transcoder's latency, and the viewer goes on from that IDR.
// Up to the source it waits for the source's next IDR, since nobody can
// ask an SRT encoder for one, while the rung plays on.

// holdTimeout gives up a held move whose IDR did not come: the rung
// stopped delivering.
var holdTimeout = time.Second

// Poll returns the next frame for the viewer's sender: the main reader's
// audio, and the video of the rung the viewer gets.
func (s *Switch) Poll() (hub.Frame, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	s.evaluate(now)
	if s.moving && s.next != nil {
		if f, ok := s.moveDown(now); ok {
			return f, true, nil
		}
	}
	for {
		f, ok, err := s.cfg.Main.Poll()
		if err != nil {
			return f, ok, err
		}
		if !ok {
			if s.rung != nil {
				return s.pollRung()
			}
			return f, false, nil
		}
		if f.Gen != s.gen {
			s.newGeneration(f.Gen)
		}
		if f.Video == nil {
			return f, true, nil
		}
		if s.rung != nil && s.moving && s.next == nil && f.Video.IDR && s.after(f.Video.PTS) {
			s.complete(nil, now) // up to the source, at its IDR
		}
		if s.rung != nil || s.hold {
			continue // the viewer's video comes from a rung, or is held
		}
		if s.needIDR {
			if !f.Video.IDR {
				continue
			}
			s.needIDR = false
		}
		s.sent(f)
		return f, true, nil
	}
}

// pollRung takes the active rung's next picture.
func (s *Switch) pollRung() (hub.Frame, bool, error) {
	for {
		f, ok, err := s.rung.Poll()
		if errors.Is(err, hub.ErrEnded) {
			// The rung went away (its publisher left, or its transcode
			// stopped): back to the source at its next IDR.
			s.cfg.Log.Info("viewer's rendition ended; back to the source", "rendition", s.rungs[s.active].ID)
			s.rung.Close()
			s.rung, s.active, s.needIDR = nil, 0, true
			s.policy.Failed(0, s.cfg.Now())
			return hub.Frame{}, false, nil
		}
		if err != nil || !ok {
			return hub.Frame{}, false, nil
		}
		if f.Video == nil || s.hold || !s.after(f.Video.PTS) {
			continue
		}
		f.Gen, f.CatchUp = s.gen, false
		s.sent(f)
		return f, true, nil
	}
}

// moveDown reads the target rung: true with its IDR once the viewer
// moves onto it.
func (s *Switch) moveDown(now time.Time) (hub.Frame, bool) {
	for {
		f, ok, err := s.next.Poll()
		if err != nil {
			s.fail("its rendition ended", now)
			return hub.Frame{}, false
		}
		if !ok {
			switch {
			case s.hold && now.Sub(s.heldAt) > holdTimeout:
				s.fail("no keyframe from the rendition", now)
			case !s.hold && now.Sub(s.movedAt) > MoveTimeout:
				// Not started (the transcode budget refused it): the
				// viewer never stopped, and stays.
				s.fail("the rendition did not start", now)
			}
			return hub.Frame{}, false
		}
		if f.Video == nil {
			continue
		}
		if f.Video.IDR && s.after(f.Video.PTS) {
			s.complete(s.next, now)
			f.Gen, f.CatchUp = s.gen, false
			s.sent(f)
			return f, true
		}
		if !s.hold && s.haveLast {
			// The rung runs but behind the viewer: hold the viewer's
			// picture and ask for an IDR after it.
			s.hold, s.heldAt = true, now
			if s.cfg.RequestIDR != nil {
				s.cfg.RequestIDR(s.rungs[s.target].ID, s.last)
			}
		}
	}
}

// after reports whether a picture at pts may follow what went out.
func (s *Switch) after(pts int64) bool { return !s.haveLast || pts > s.last }

func (s *Switch) sent(f hub.Frame) { s.last, s.haveLast = f.Video.PTS, true }

// complete makes the move's target the viewer's rung (r its reader, nil
// for the source).
func (s *Switch) complete(r RungReader, now time.Time) {
	from := s.active
	if s.rung != nil {
		s.rung.Close()
	}
	s.rung, s.next, s.active = r, nil, s.target
	s.moving, s.hold = false, false
	s.policy.Switched(s.active, now)
	dir := "down"
	if s.active < from {
		dir = "up"
	}
	if c := s.cfg.Switches; c != nil {
		if dir == "up" {
			c.Up.Add(1)
		} else {
			c.Down.Add(1)
		}
	}
	est := int64(0)
	if s.estimate != nil {
		e, _ := s.estimate()
		est = e.Bitrate
	}
	s.cfg.Log.Info("viewer switched rendition", "direction", dir, "from", s.rungs[from].ID, "to", s.rungs[s.active].ID,
		"estimate", est, "took", now.Sub(s.movedAt).Round(time.Millisecond).String())
}

// fail gives the move up: the viewer stays where it is (its video goes on
// from the next IDR of its own rung if it was held).
func (s *Switch) fail(why string, now time.Time) {
	s.cfg.Log.Info("viewer's rendition switch given up", "to", s.rungs[s.target].ID, "reason", why)
	held := s.hold
	s.cancelMove()
	if held {
		if s.rung != nil {
			s.rung.SkipToIDR()
		} else {
			s.needIDR = true
		}
	}
	s.policy.Failed(s.active, now)
}

func (s *Switch) cancelMove() {
	if s.next != nil {
		s.next.Close()
		s.next = nil
	}
	s.moving, s.hold = false, false
}

// evaluate asks the policy where the viewer should be, every
// EvaluateEvery, and starts a move there.
func (s *Switch) evaluate(now time.Time) {
	if now.Sub(s.evaluated) < EvaluateEvery {
		return
	}
	s.evaluated = now
	sent := s.sendRate(now)
	if len(s.rungs) < 2 {
		if s.cfg.Refresh == nil {
			return
		}
		if s.setRungs(s.cfg.Refresh(), now); len(s.rungs) < 2 {
			return
		}
	}
	s.policy.Probes = s.prober != nil
	if s.prober != nil {
		if r, ok := s.prober.ProbeResult(); ok {
			up := s.policy.Probed(r, now)
			s.cfg.Log.Info("viewer's link probed", "rate_sent", r.Sent, "rate_received", r.Received,
				"packets", r.Packets, "lost", r.Lost, "valid", r.Valid, "move_up", up)
		}
	}
	var target int
	switch {
	case s.policy.Pinned() >= 0:
		target = s.policy.Decide(bwe0, sent, now, now)
	case s.estimate != nil:
		e, started := s.estimate()
		target = s.policy.Decide(e, sent, started, now)
	default:
		return
	}
	if bps := s.policy.TakeProbe(); bps > 0 && !s.prober.Probe(bps) {
		s.policy.ProbeRefused()
	}
	if s.moving && target == s.target || !s.moving && target == s.active {
		return
	}
	s.cancelMove()
	if target == s.active {
		return
	}
	s.target, s.moving, s.movedAt = target, true, now
	if target == 0 {
		return // the source's next IDR completes it
	}
	id := s.rungs[target].ID
	r, err := s.cfg.Open(id)
	if err != nil {
		s.cfg.Log.Info("viewer's rendition unavailable", "rendition", id, "err", err)
		s.moving = false
		s.policy.Failed(s.active, now)
		return
	}
	if s.wake != nil {
		r.SetWake(s.wake)
	}
	r.Attach()
	s.next = r
}

var bwe0 bwe.Estimate // a pinned viewer's policy reads no estimate

// sendRate is what the viewer was sent over the last second or so, in
// bit/s (CountSent's bytes, audio and retransmissions included): what its
// link is asked to carry.
func (s *Switch) sendRate(now time.Time) int64 {
	b := s.sentBytes.Load()
	s.samples[s.sampleNext%len(s.samples)] = sample{now, b}
	s.sampleNext++
	// The oldest sample at least a second back, or the oldest there is.
	var from sample
	for i := range s.samples {
		c := s.samples[(s.sampleNext+i)%len(s.samples)]
		if c.at.IsZero() {
			continue
		}
		from = c
		if now.Sub(c.at) <= 2*time.Second {
			break
		}
	}
	if d := now.Sub(from.at); !from.at.IsZero() && d >= 500*time.Millisecond {
		return int64(float64(b-from.bytes) * 8 / d.Seconds())
	}
	return 0
}

type sample struct {
	at    time.Time
	bytes uint64
}
