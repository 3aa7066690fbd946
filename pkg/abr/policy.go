// Package abr (adaptive bitrate) moves one viewer between the renditions
// of its path's video (the source on top, the lower rungs pkg/ingest
// makes on demand):
// Policy decides from the viewer's bandwidth estimate which rung it
// should get, Switch reads the rungs' hub readers and hands the viewer's
// sender one stream of frames that changes rung at an IDR, so the viewer
// sees one SSRC, contiguous sequence numbers and timestamps that go on,
// and a new picture size at a keyframe.
package abr

import (
	"time"

	"github.com/srtwhep/srtwhep/pkg/bwe"
)

// The policy's timing. Vars so tests may shorten them.
var (
	// MinSwitchGap: no two chosen switches closer than this (abandoning
	// a failed probe is the probe's undo and is not held back).
	MinSwitchGap = 4 * time.Second
	// ProbeAfter is how long the estimate must go without a cut, while
	// it carries the viewer's rung, before the rung above is tried; each
	// failed try doubles it up to ProbeAfterMax, a try that holds resets
	// it. A try through a link that cannot carry it freezes the picture
	// for about a second, hence the backing off.
	ProbeAfter    = 12 * time.Second
	ProbeAfterMax = 2 * time.Minute
	// ProbeHold is how long a try must go without a cut to hold.
	ProbeHold = 5 * time.Second
	// ProbeOver is the rate of the probe cluster that asks whether the
	// link carries the rung above, as a multiple of the rung's rate, and
	// ProbeMargin what the cluster must arrive at for the move: the
	// rung's rate with a tenth to spare (the cluster's own rate and
	// what the stream sends beside it both fit only in a link wider).
	ProbeOver   = 1.25
	ProbeMargin = 1.1
	// ProbeFailedMax caps the wait after failed clusters: one cost the
	// viewer nothing but a moment's queue (tens of kB), where a failed
	// timed try cost it a second of broken pictures, so the link is asked
	// again within seconds of recovering (ProbeAfter still times the
	// first cluster after a move down).
	ProbeFailedMax = 8 * time.Second
	// CongestedWithin: a cut this recent is congestion the estimate's
	// level may be trusted for; without one a low estimate is only a
	// quiet scene (the estimate never claims much more than what the
	// viewer received).
	CongestedWithin = 2 * time.Second
)

// Down when, after a cut, the estimate stays below this share of what the
// viewer is being sent, for LowFor: GCC cuts to 0.85 of what arrived, so
// a cut on a link that carries what it is sent (a scheduling hiccup on a
// loaded server, or a window of small pictures below the stream's
// nominal rate) stays above it, while a link narrower than the stream
// delivers, and so reads, far less. A lower rung is chosen when its
// nominal rate fits in fitShare of the estimate.
const (
	downShare = 0.8
	fitShare  = 0.85
)

// LowFor is how long the estimate must stay low before a move down: one
// low reading is not a link.
var LowFor = 500 * time.Millisecond

// Policy is one viewer's choice of rung. Not safe for concurrent use.
type Policy struct {
	// Rates are the rungs' bit/s, top (the source) first.
	Rates []int

	cur      int // the rung the viewer gets (or is being moved to)
	pinned   int // -1: the estimate chooses
	switched time.Time
	// A try of the rung above: its start, and the rung to go back to.
	probing   bool
	probeFrom int
	// lowSince is when the estimate went below what the rung needs; zero
	// while it is not.
	lowSince time.Time
	probeAt  time.Time
	backoff  time.Duration
	// stayedSince is when the viewer's rung last changed or a try failed:
	// the wait for the next try counts from it.
	stayedSince time.Time

	// Probes says the viewer's sender can send probe clusters (the
	// switch sets it): with it, and a transport-cc estimate, the rung
	// above is tried only once a cluster at its rate arrived at it;
	// without (a receiver with no transport-cc), after the wait alone.
	Probes bool
	// A cluster asked for: its rate until the switch takes it, and the
	// rung it was asked from while its result is awaited.
	probeWant int
	awaiting  bool
	probeFor  int
}

// NewPolicy starts a viewer on the top rung at now.
func NewPolicy(rates []int, now time.Time) *Policy {
	return &Policy{Rates: rates, pinned: -1, switched: now.Add(-MinSwitchGap), stayedSince: now, backoff: ProbeAfter}
}

// Pin fixes the viewer on rung i (-1 hands the choice back).
func (p *Policy) Pin(i int, now time.Time) {
	p.pinned = i
	p.probing, p.awaiting, p.probeWant = false, false, 0
	if i < 0 {
		p.stayedSince = now
	}
}

// Pinned is the pinned rung, -1 when none.
func (p *Policy) Pinned() int { return p.pinned }

// Current is the rung the policy last chose.
func (p *Policy) Current() int { return p.cur }

// Failed tells the policy that its last choice could not be made (the
// rung never delivered a picture: its transcode was refused): the viewer
// stays where it is and waits before trying again.
func (p *Policy) Failed(actual int, now time.Time) {
	p.cur, p.probing = actual, false
	p.stayedSince = now
	p.backoff = min(2*p.backoff, ProbeAfterMax)
}

// Switched tells the policy the viewer now gets rung i: a try of a rung
// above is timed from the picture it starts at, which may come a GOP
// after the choice.
func (p *Policy) Switched(i int, now time.Time) {
	if p.probing && i == p.cur {
		p.probeAt = now
	}
}

// Decide returns the rung the viewer should get at now for estimate e,
// while it is being sent sent bit/s (over the last second or so; started
// is the sender's start, the origin of an estimate never cut).
func (p *Policy) Decide(e bwe.Estimate, sent int64, started, now time.Time) int {
	if p.pinned >= 0 {
		p.cur = min(p.pinned, len(p.Rates)-1)
		return p.cur
	}
	if e.Bitrate <= 0 || len(p.Rates) < 2 {
		return p.cur
	}
	sinceCut := e.SinceDecrease(now, started)
	if p.probing {
		switch {
		case sinceCut < now.Sub(p.probeAt) && e.Bitrate < int64(float64(sent)*downShare):
			// Cut since the try began, below what the rung needs: back.
			p.set(p.probeFrom, now)
			p.probing = false
			p.backoff = min(2*p.backoff, ProbeAfterMax)
			return p.cur
		case now.Sub(p.probeAt) >= ProbeHold:
			p.probing = false
			p.backoff = ProbeAfter
		default:
			return p.cur
		}
	}
	if now.Sub(p.switched) < MinSwitchGap {
		return p.cur
	}
	rate := p.Rates[p.cur]
	congested := !e.LastDecrease.IsZero() && now.Sub(e.LastDecrease) < CongestedWithin
	low := congested && e.Bitrate < int64(float64(sent)*downShare)
	switch {
	case !low:
		p.lowSince = time.Time{}
	case p.lowSince.IsZero():
		p.lowSince = now
	}
	if low && now.Sub(p.lowSince) >= LowFor && p.cur < len(p.Rates)-1 {
		next := p.cur + 1
		for next < len(p.Rates)-1 && float64(p.Rates[next]) > float64(e.Bitrate)*fitShare {
			next++
		}
		p.set(next, now)
		return p.cur
	}
	if p.cur > 0 && sinceCut >= p.backoff && now.Sub(p.stayedSince) >= p.backoff && e.Bitrate >= int64(rate) {
		if p.Probes && e.Source == bwe.SourceTransportCC {
			// Ask the link first (Probed moves).
			if !p.awaiting {
				p.awaiting, p.probeFor = true, p.cur
				p.probeWant = int(float64(p.Rates[p.cur-1]) * ProbeOver)
			}
			return p.cur
		}
		p.try(now)
	}
	return p.cur
}

// try moves to the rung above as a try, abandoned at the first cut.
func (p *Policy) try(now time.Time) {
	p.probing, p.probeFrom, p.probeAt = true, p.cur, now
	p.set(p.cur-1, now)
}

// TakeProbe returns the rate of the probe cluster the policy asks for,
// once; 0: none.
func (p *Policy) TakeProbe() int {
	r := p.probeWant
	p.probeWant = 0
	return r
}

// ProbeRefused: the sender would not send the cluster now (too soon
// after its last one, or the estimate was just cut); the policy asks
// again at a later Decide.
func (p *Policy) ProbeRefused() { p.awaiting, p.probeWant = false, 0 }

// Probed tells the policy what the cluster it asked for found, and
// reports whether the viewer is moved up on it: only if the cluster
// arrived at ProbeMargin times the rate of the rung above, with little
// loss. A cluster that did not is a failed try that cost the viewer
// nothing: the wait for the next one doubles, up to ProbeFailedMax.
func (p *Policy) Probed(r bwe.ProbeResult, now time.Time) bool {
	if !p.awaiting {
		return false
	}
	p.awaiting = false
	if p.pinned >= 0 || p.cur != p.probeFor || p.cur == 0 {
		return false // the viewer moved meanwhile
	}
	if r.Carries(int64(float64(p.Rates[p.cur-1]) * ProbeMargin)) {
		p.try(now)
		return true
	}
	p.stayedSince = now
	p.backoff = min(2*p.backoff, ProbeFailedMax)
	return false
}

func (p *Policy) set(i int, now time.Time) {
	if i != p.cur {
		p.cur, p.switched, p.stayedSince = i, now, now
		p.lowSince = time.Time{}
	}
}
