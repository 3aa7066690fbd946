package ladder

import (
	"fmt"
	"strings"
	"testing"
)

// run is one ladder of a setup whose server CPU grows by slope % and RSS
// by mib MiB per viewer, with stalls at its top step.
func run(label, mode string, slope, mib float64, stalls uint64) *Report {
	var steps []Step
	for _, n := range []int{0, 100, 200, 400} {
		s := Step{N: n, Verified: n, CPUMean: 2 + slope*float64(n), RSSMiB: 40 + mib*float64(n), GenCPU: 0.01 * float64(n), Drops: ptr(0)}
		if n == 400 {
			s.Stalls = stalls
		}
		s.Judge()
		steps = append(steps, s)
	}
	return &Report{Label: label, Mode: mode, Steps: steps, Summary: Summarize(steps)}
}

func TestSummarizeMemoryAndStalls(t *testing.T) {
	sm := run("base", "browser", 0.15, 0.3, 2).Summary
	if !sm.RSSFitOK || !near(sm.RSSPerViewerMiB, 0.3) || !near(sm.RSSInterceptMiB, 40) {
		t.Errorf("RSS fit %v + %v·N (%v), want 40 + 0.3·N", sm.RSSInterceptMiB, sm.RSSPerViewerMiB, sm.RSSFitOK)
	}
	if sm.RSSAtRefMiB == nil || !near(*sm.RSSAtRefMiB, 100) {
		t.Errorf("RSS at 200 = %v, want the step's 100 MiB", sm.RSSAtRefMiB)
	}
	if sm.Stalls != 2 {
		t.Errorf("stalls %d, want 2", sm.Stalls)
	}
	// Between steps 100 and 400, RSS at 200 is interpolated.
	steps := []Step{{N: 0, RSSMiB: 30}, {N: 100, RSSMiB: 50}, {N: 400, RSSMiB: 110}}
	if v := rssAt(steps, 200); v == nil || !near(*v, 70) {
		t.Errorf("interpolated RSS at 200 = %v, want 70", v)
	}
	if v := rssAt(steps[:2], 200); v != nil {
		t.Errorf("RSS at 200 from steps up to 100 = %v, want none", *v)
	}
}

func TestHeadlines(t *testing.T) {
	withAudio := run("base", "browser", 0.18, 0.3, 0)
	withAudio.Audio = true
	reps := []*Report{
		withAudio,
		run("base", "gro", 0.07, 0.3, 0),
		run("base", "browser", 0.16, 0.3, 0),
		run("this", "browser", 0.08, 0.2, 1),
		run("this", "browser", 0.06, 0.2, 0),
		run("base", "browser", 0.20, 0.3, 0),
		run("this", "browser", 0.07, 0.2, 0),
		run("base", "browser", 0.17, 0.3, 4),
	}
	hs := Headlines(reps)
	if len(hs) != 4 || hs[0].Label != "base" || hs[0].Mode != "browser" || hs[0].Audio || hs[1].Label != "this" ||
		!hs[2].Audio || hs[3].Mode != "gro" {
		t.Fatalf("setups %+v, want base and this browser video first, then with audio, then gro", hs)
	}
	if m, _ := Median(hs[0].Marginal); !near(m, 0.17) || hs[0].Runs != 3 {
		t.Errorf("base: median marginal %v over %d runs, want 0.17 over 3", m, hs[0].Runs)
	}
	if m, _ := Median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median of an even count = %v, want 2.5", m)
	}
	var b strings.Builder
	if err := WriteHeadlines(&b, hs); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| base, browser viewers, video | 3 (3) | 0.170 (0.160, 0.200, 0.170) |",
		"| this, browser viewers, video | 3 (3) | 0.070 (0.080, 0.060, 0.070) |",
		"gro viewers, video — **extra, not the headline**",
		"this costs 0.41× what base does per viewer",
		"| 100.0 (100.0, 100.0, 100.0) | 0.300 (0.300, 0.300, 0.300) | 0 (0, 0, 4) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("headline lacks %q:\n%s", want, md)
		}
	}
}

func TestReportNamesModeAndProfile(t *testing.T) {
	r := run("this", "gro", 0.07, 0.3, 0)
	r.GRO = true
	r.ProfileN, r.ProfileTop = 400, "Showing nodes accounting for 1s\n      flat  flat%"
	for i := range r.Steps {
		r.Steps[i].SocketReceiveDrops, r.Steps[i].SocketSendRefused = ptr(float64(i)), ptr(1)
	}
	var b strings.Builder
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{"this, gro viewers", "**Not a headline figure**", "no RTCP sent (not browser-like)",
		"RSS at N = 200: 100.0 MiB (105 MB); per viewer 0.300 MiB", "Stalls (video pauses > 200 ms", "Server CPU profile at N = 400", "flat%",
		fmt.Sprintf("media socket over the holds: %d datagrams dropped on receive (full buffer), %d sends refused", len(r.Steps)*(len(r.Steps)-1)/2, len(r.Steps))} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
