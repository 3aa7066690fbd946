package main

// What the shaped-link rig measures: a window of play from the page's
// getStats(), and the server's rendition moves.

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// logLadder logs the server's lines about renditions and a viewer's
// video skipping to keyframes, which explain a long run's figures.
func (r *shapedRig) logLadder(t *testing.T) {
	for _, l := range strings.Split(r.srv.Log.String(), "\n") {
		if strings.Contains(l, "rendition") || strings.Contains(l, "keyframe") || strings.Contains(l, "viewer opened") {
			t.Log(l)
		}
	}
}

// ladderEvents counts what the server logged of its renditions:
// transcoders started, and viewers' switches down and up.
type ladderEvents struct{ started, down, up int }

func (r *shapedRig) ladderEvents() ladderEvents {
	l := r.srv.Log
	return ladderEvents{
		started: len(l.Lines("rendition started")),
		down:    len(l.Lines("viewer switched rendition", "direction=down")),
		up:      len(l.Lines("viewer switched rendition", "direction=up")),
	}
}

func (e ladderEvents) since(o ladderEvents) ladderEvents {
	return ladderEvents{e.started - o.started, e.down - o.down, e.up - o.up}
}

func (e ladderEvents) String() string {
	return fmt.Sprintf("%d renditions started, %d switches down, %d up", e.started, e.down, e.up)
}

// freezeGap is Chromium's freeze at 30 fps: a frame shown for longer than
// max(3 × the mean frame time, the mean + 150 ms).
const freezeGap = 183.0 // ms

// played is what a viewer saw over a window of play.
type played struct {
	seconds         float64
	fps             float64
	frozen          float64 // s of the window within freezes (see freezeGap)
	statsFrozen     float64 // s, the growth of getStats()' totalFreezesDuration
	freezes         int     // the growth of getStats()' freezeCount
	lost, received  int
	kbps            float64
	concealed       float64 // share of the audio samples played that were concealed
	longestGap      float64 // ms between presented frames
	width, height   int     // at the end
	sizes           []string
	reconnectedMid  bool
	framesPresented int
}

func (p played) String() string {
	s := fmt.Sprintf("%.1f fps, %.1f s of %.0f frozen (getStats: %d freezes ending in it, %.1f s), %d of %d packets lost, %.0f kbit/s, %dx%d at the end (sizes %s), longest gap %.0f ms, audio %.2f %% concealed",
		p.fps, p.frozen, p.seconds, p.freezes, p.statsFrozen, p.lost, p.lost+p.received, p.kbps, p.width, p.height,
		strings.Join(p.sizes, " → "), p.longestGap, 100*p.concealed)
	if p.reconnectedMid {
		s += " (the page reconnected during the window)"
	}
	return s
}

// play measures d of play from now: the deltas of the page's getStats()
// between the window's ends, and the presented frames' sizes and gaps
// within it.
func (r *shapedRig) play(t *testing.T, d time.Duration) played {
	t.Helper()
	a := r.stats(t)
	time.Sleep(d) // the window itself: the figures are its deltas
	b := r.stats(t)
	return r.between(t, a, b)
}

func (r *shapedRig) between(t *testing.T, a, b linkStats) played {
	t.Helper()
	sec := (b.T - a.T) / 1000
	p := played{
		seconds: sec, fps: float64(b.FramesDecoded-a.FramesDecoded) / sec,
		statsFrozen: b.TotalFreezesDuration - a.TotalFreezesDuration, freezes: b.FreezeCount - a.FreezeCount,
		lost: b.PacketsLost - a.PacketsLost, received: b.PacketsReceived - a.PacketsReceived,
		kbps:  float64(b.BytesReceived-a.BytesReceived) * 8 / 1000 / sec,
		width: b.FrameWidth, height: b.FrameHeight, reconnectedMid: a.PC != b.PC,
		framesPresented: b.Presented - a.Presented,
	}
	if n := b.TotalSamplesReceived - a.TotalSamplesReceived; n > 0 {
		p.concealed = float64(b.ConcealedSamples-a.ConcealedSamples) / float64(n)
	}
	rec := r.frames(t)
	size := ""
	for _, s := range rec.Sizes {
		if s[0] <= a.T {
			size = fmt.Sprintf("%.0fx%.0f", s[1], s[2])
		} else if s[0] <= b.T {
			if size != "" {
				p.sizes = append(p.sizes, size)
			}
			size = fmt.Sprintf("%.0fx%.0f", s[1], s[2])
		}
	}
	p.sizes = append(p.sizes, size)
	// getStats() adds a freeze to its total when the freeze ends, whole:
	// one that began in the warm-up would count in the window, and one
	// still going on at its end would not. The window's figure is the
	// part of each freeze that lies within it.
	last := rec.Last
	if last == 0 {
		last = a.T
	}
	gaps := append(rec.Gaps, [2]float64{last, b.T - last}) // the one still open, if it is one
	for _, g := range gaps {
		if g[1] <= freezeGap {
			continue
		}
		if in := min(g[0]+g[1], b.T) - max(g[0], a.T); in > 0 {
			p.frozen += in / 1000
			p.longestGap = max(p.longestGap, in)
		}
	}
	return p
}
