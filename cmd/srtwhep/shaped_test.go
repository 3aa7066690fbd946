package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/api"
)

// shapedWarmUp is the play after the page's first video packets that no
// figure counts: the start at the source's rate, the estimate finding
// the link, the move to what the link carries. Behind 1 Mbit/s the first
// picture of the rendition came 3.4 s after the first packets (the move
// itself 1.7 s after the offer); a freeze of that start that ends inside
// the window counts only its part within it.
const shapedWarmUp = 8 * time.Second

// TestBrowserShapedLink plays the built-in player in headless Chromium
// behind a 1 Mbit/s link with a 720p30 2.5 Mbit/s source (issue 28: on
// main it froze 24.7 s of 30; behind this rig's link, whose queue a 720p
// keyframe overflows, main decodes nothing): after a warm-up it must decode at least
// 25 frames a second, with at most 1 s of 20 frozen (the 1.5 s
// of 30, scaled to the shorter window) and at most 2 % of its sound
// concealed. Unshaped, first, the same page plays the source itself,
// 1280x720, with no transcoder running.
//
// Not parallel: frame rates need the machine to itself.
func TestBrowserShapedLink(t *testing.T) {
	r := newShapedRig(t, "10.225.0", "")

	r.open(t)
	time.Sleep(3 * time.Second) // past the cached GOP's catch-up burst
	// What this half asks is whether a viewer that keeps up is left on
	// the source; TestBrowserPlays holds the unshaped page to 25 fps. One
	// scheduling hiccup of the loaded machine (a 0.5 s gap) takes a 5 s
	// window below that, not below 20.
	p := r.play(t, 5*time.Second)
	t.Logf("unshaped: %v", p)
	if p.width != 1280 || p.height != 720 || p.fps < 20 {
		t.Errorf("unshaped: %v; want 1280x720 at ≥ 20 fps, the source passed through", p)
	}
	// The ladder is there, and none of it runs: a viewer that keeps up
	// needs no transcoder.
	cam := r.path(t)
	if cam.Transcode != nil || len(cam.Renditions) == 0 {
		t.Errorf("unshaped: live/cam1 has transcode %+v and renditions %+v; want the source passed through and a ladder below it", cam.Transcode, cam.Renditions)
	}
	for _, rd := range cam.Renditions {
		if rd.Running || rd.Viewers > 0 {
			t.Errorf("unshaped: rendition %+v runs, want none running", rd)
		}
	}
	if e := r.ladderEvents(); e != (ladderEvents{}) {
		t.Errorf("unshaped: %v, want none", e)
	}

	r.link.set(t, 1000)
	r.open(t)
	t0 := r.pageNow(t)
	r.plays1M(t)
	if os.Getenv("SHAPED_DIAG") != "" {
		r.logLadder(t)
		rec := r.frames(t)
		for _, g := range rec.Gaps {
			t.Logf("gap at %+.0f ms: %.0f ms", g[0]-t0, g[1])
		}
		for _, s := range rec.Sizes {
			t.Logf("size at %+.0f ms: %.0fx%.0f", s[0]-t0, s[1], s[2])
		}
	}
}

// plays1M measures 20 s of play after the warm-up of a page that has
// just opened behind 1 Mbit/s and checks it against the goal:
// at least 25 decoded frames a second, at most 1 s frozen (1.5 s of 30,
// scaled to the window), at most 2 % of the sound concealed, from a
// lower rendition that runs with the page on it.
func (r *shapedRig) plays1M(t *testing.T) {
	t.Helper()
	time.Sleep(shapedWarmUp)
	p := r.play(t, 20*time.Second)
	msg := fmt.Sprintf("browser behind 1 Mbit/s: %v; server: %v", p, r.ladderEvents())
	t.Log(msg)
	fmt.Println(msg)
	if p.fps < 25 || p.frozen > 1.0 || p.concealed > 0.02 || p.reconnectedMid {
		t.Errorf("behind 1 Mbit/s: %v; want ≥ 25 fps, ≤ 1 s of 20 frozen, ≤ 2 %% of the sound concealed, one session", p)
	}
	if p.height >= 720 {
		t.Errorf("behind 1 Mbit/s the page plays %dx%d, want a lower rendition than the 1280x720 source", p.width, p.height)
	}
	if cam := r.path(t); !slices.ContainsFunc(cam.Renditions, func(rd api.Rendition) bool { return rd.Running && rd.Viewers == 1 }) {
		t.Errorf("behind 1 Mbit/s: renditions %+v, want one running with the page on it", cam.Renditions)
	}
}

// TestBrowserShapedLinkEarlyViewer, with SHAPED_LONG=1: the page opens
// behind 1 Mbit/s as soon as the publisher's stream is parsed, before
// the server has logged its ladder (as a player that retries while its
// publisher reconnects does), and must play as one that opens later.
func TestBrowserShapedLinkEarlyViewer(t *testing.T) {
	if os.Getenv("SHAPED_LONG") == "" {
		t.Skip("the early viewer runs with SHAPED_LONG=1")
	}
	r := newShapedRig(t, "10.228.0", "")
	r.link.set(t, 1000)
	r.open(t)
	defer r.logLadder(t)
	r.plays1M(t)
}

// TestBrowserShapedLinkFigures measures, with SHAPED_LONG=1, 30 s of play
// behind each link of the table, one fresh session each: no
// shaping, 2 Mbit/s, 1 Mbit/s. It prints one line per link.
func TestBrowserShapedLinkFigures(t *testing.T) {
	if os.Getenv("SHAPED_LONG") == "" {
		t.Skip("the shaped-link table runs with SHAPED_LONG=1")
	}
	r := newShapedRig(t, "10.226.0", "")
	for _, kbit := range []int{0, 2000, 1000} {
		r.link.set(t, kbit)
		e0 := r.ladderEvents()
		r.open(t)
		time.Sleep(shapedWarmUp)
		p := r.play(t, 30*time.Second)
		name := "unshaped"
		if kbit > 0 {
			name = fmt.Sprintf("%g Mbit/s", float64(kbit)/1000)
		}
		fmt.Printf("shaped link | %-9s | %v | server: %s; %v (warm-up included)\n", name, p, r.pathSummary(t), r.ladderEvents().since(e0))
	}
	r.logLadder(t)
}

// TestBrowserShapedLinkChanging, with SHAPED_LONG=1, plays one session
// behind a link that changes 4 → 1 → 4 Mbit/s every 20 s and prints the
// timeline: each change of the picture's size relative to the link's
// last change, and the longest time without a new frame in each phase.
// The goal: down within 2 s of the drop, back to 720p within 10 s
// of the recovery, no freeze longer than 1 s.
func TestBrowserShapedLinkChanging(t *testing.T) {
	if os.Getenv("SHAPED_LONG") == "" {
		t.Skip("the changing-link timeline runs with SHAPED_LONG=1")
	}
	r := newShapedRig(t, "10.227.0", "")
	// A viewer of a stream that is on: the ladder is known when it comes.
	testkit.WaitFor(t, 10*time.Second, "live/cam1's renditions in GET /v1/paths", func() bool { return len(r.path(t).Renditions) > 0 })
	r.link.set(t, 4000)
	r.open(t)
	time.Sleep(shapedWarmUp)
	type change struct {
		at   float64 // page ms
		wall time.Time
		kbit int
	}
	changes := []change{{r.pageNow(t), time.Now(), 4000}}
	a := r.stats(t)
	for _, kbit := range []int{1000, 4000} {
		time.Sleep(20 * time.Second) // the phase itself
		r.link.set(t, kbit)
		changes = append(changes, change{r.pageNow(t), time.Now(), kbit})
	}
	time.Sleep(20 * time.Second)
	b := r.stats(t)
	changes = append(changes, change{b.T, time.Now(), 0})
	// The server's switches, by its log's clock (the same machine's).
	type switched struct {
		at   time.Time
		line string
	}
	var switches []switched
	for _, l := range r.srv.Log.Lines("viewer switched rendition") {
		if i := strings.Index(l, "time="); i >= 0 && len(l) >= i+5+24 {
			if at, err := time.Parse(time.RFC3339Nano, l[i+5:i+5+24]); err == nil {
				switches = append(switches, switched{at, l[strings.Index(l, "direction="):]})
			}
		}
	}
	rec := r.frames(t)
	var lines []string
	for i, c := range changes[:len(changes)-1] {
		end := changes[i+1].at
		lines = append(lines, fmt.Sprintf("%+7.1f s  link %g Mbit/s", (c.at-changes[0].at)/1000, float64(c.kbit)/1000))
		for _, s := range rec.Sizes {
			if s[0] >= c.at && s[0] < end {
				lines = append(lines, fmt.Sprintf("%+7.1f s    picture %.0fx%.0f, %.1f s after the link changed", (s[0]-changes[0].at)/1000, s[1], s[2], (s[0]-c.at)/1000))
			}
		}
		for _, sw := range switches {
			if !sw.at.Before(c.wall) && sw.at.Before(changes[i+1].wall) {
				lines = append(lines, fmt.Sprintf("%+7.1f s    server: %s, %.1f s after the link changed",
					sw.at.Sub(changes[0].wall).Seconds(), sw.line, sw.at.Sub(c.wall).Seconds()))
			}
		}
		longest := 0.0
		for _, g := range rec.Gaps {
			if g[0] >= c.at && g[0] < end {
				longest = max(longest, g[1])
			}
		}
		lines = append(lines, fmt.Sprintf("           longest gap between frames in this phase: %.0f ms", longest))
	}
	fmt.Printf("changing link:\n%s\nover the whole run: %v\n", strings.Join(lines, "\n"), r.between(t, a, b))
	r.logLadder(t)
}
