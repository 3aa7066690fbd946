package abr

import (
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/bwe"
)

// run steps p every 250 ms from `from` to `to` (seconds after t0) with the
// estimate est(t) gives, and returns when each rung change happened.
type change struct {
	at   time.Duration
	rung int
}

var t0 = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// The viewer is sent its rung's nominal rate.
func run(p *Policy, from, to time.Duration, est func(time.Duration) bwe.Estimate) []change {
	return runSent(p, from, to, est, func(time.Duration) int64 { return int64(p.Rates[p.Current()]) })
}

// runSent is run with the rate the viewer is sent at each step.
func runSent(p *Policy, from, to time.Duration, est func(time.Duration) bwe.Estimate, sent func(time.Duration) int64) []change {
	var out []change
	prev := p.Current()
	for d := from; d <= to; d += 250 * time.Millisecond {
		if r := p.Decide(est(d), sent(d), t0, t0.Add(d)); r != prev {
			out = append(out, change{d, r})
			prev = r
		}
	}
	return out
}

// link is an estimate that carries rate bit/s, cut at each of cuts.
func link(rate int64, cuts ...time.Duration) bwe.Estimate {
	e := bwe.Estimate{Bitrate: rate, Source: bwe.SourceTransportCC}
	if len(cuts) > 0 {
		e.LastDecrease = t0.Add(cuts[len(cuts)-1])
	}
	return e
}

func s(n float64) time.Duration { return time.Duration(n * float64(time.Second)) }

func TestPolicyDownWithinTwoSecondsOfADrop(t *testing.T) {
	p := NewPolicy([]int{2_500_000, 700_000}, t0)
	got := run(p, 0, s(12), func(d time.Duration) bwe.Estimate {
		if d < s(8) {
			return link(3_700_000)
		}
		// The link fell to 1 Mbit/s: the estimator cuts within a few
		// feedback intervals.
		return link(1_000_000, s(8.5))
	})
	if len(got) != 1 || got[0].rung != 1 || got[0].at > s(10) {
		t.Fatalf("changes %v; want one move down to rung 1 within 2 s of the drop at 8 s", got)
	}
}

func TestPolicyQuietSceneIsNoDrop(t *testing.T) {
	// A still scene sends far less than the nominal rate, and the
	// estimate (capped at 1.5x what arrived) follows it down with no cut:
	// no reason to leave the source.
	p := NewPolicy([]int{2_500_000, 700_000}, t0)
	if got := run(p, 0, s(60), func(time.Duration) bwe.Estimate { return link(900_000) }); len(got) != 0 {
		t.Fatalf("changes %v on a link that never congested; want none", got)
	}
}

func TestPolicyCutOfAFullLinkIsNoDrop(t *testing.T) {
	// GCC cuts to 0.85 of what arrived: a link that carries the source
	// and saw delay spikes (a loaded server) while a run of small
	// pictures went out at 2.1 of the nominal 2.5 Mbit/s reads 1.8
	// Mbit/s for a few seconds, and recovers.
	p := NewPolicy([]int{2_500_000, 700_000}, t0)
	got := runSent(p, 0, s(30), func(d time.Duration) bwe.Estimate {
		if d >= s(10) && d < s(14) {
			return link(1_790_000, d-s(0.25))
		}
		return link(3_700_000, s(13.75))
	}, func(d time.Duration) int64 {
		if d >= s(10) && d < s(14) {
			return 2_100_000
		}
		return 2_500_000
	})
	if len(got) != 0 {
		t.Fatalf("changes %v after cuts of a link that carries what it is sent; want none", got)
	}
}

func TestPolicyUpOnlyAfterHeadroomAndBacksOff(t *testing.T) {
	p := NewPolicy([]int{2_500_000, 700_000}, t0)
	// Down at once, then a 1 Mbit/s link: every try of the source is cut
	// within a second.
	var cuts []time.Duration
	cuts = append(cuts, s(0.5))
	est := func(d time.Duration) bwe.Estimate {
		if p.Current() == 0 && d > s(1) && cuts[len(cuts)-1] < d-s(1) {
			cuts = append(cuts, d)
		}
		return link(1_000_000, cuts...)
	}
	got := run(p, s(0.5), s(120), est)
	if len(got) < 3 || got[0].rung != 1 {
		t.Fatalf("changes %v; want down, then tries of the source", got)
	}
	var tries []time.Duration
	for i, c := range got[1:] {
		if c.rung == 0 {
			tries = append(tries, c.at)
			if back := got[i+2]; i+2 >= len(got) || back.rung != 1 || back.at-c.at > s(1.5) {
				t.Fatalf("changes %v: the try at %v was not abandoned within 1.5 s", got, c.at)
			}
		}
	}
	t.Logf("changes %v", got)
	if tries[0]-got[0].at < ProbeAfter {
		t.Fatalf("first try %v after going down at %v: before %v of headroom", tries[0], got[0].at, ProbeAfter)
	}
	for i := 1; i < len(tries); i++ {
		if gap, prev := tries[i]-tries[i-1], tries[i-1]-max(got[0].at, 0); i > 1 && gap < prev {
			t.Fatalf("tries at %v: the wait does not grow", tries)
		}
	}
	if len(tries) > 4 {
		t.Fatalf("%d tries of a link that cannot carry the source in 2 minutes: %v", len(tries), tries)
	}
}

func TestPolicyTryThatHoldsStays(t *testing.T) {
	p := NewPolicy([]int{2_500_000, 700_000}, t0)
	// Congested for a while, then the link recovers (4 Mbit/s): the
	// estimate on the rung only shows what the rung needs, with no cut.
	got := run(p, 0, s(40), func(d time.Duration) bwe.Estimate {
		if d < s(5) {
			return link(1_000_000, s(0.5))
		}
		return link(1_050_000, s(4.5))
	})
	if len(got) != 2 || got[0].rung != 1 || got[1].rung != 0 {
		t.Fatalf("changes %v; want down then back up", got)
	}
	if up := got[1].at; up < s(4.5)+ProbeAfter || up > s(4.5)+ProbeAfter+s(1) {
		t.Fatalf("back up at %v; want %v of headroom after the last cut at 4.5 s", up, ProbeAfter)
	}
}

func TestPolicyRateLimit(t *testing.T) {
	p := NewPolicy([]int{4_000_000, 1_500_000, 600_000}, t0)
	// The link keeps falling: the second step down waits out MinSwitchGap.
	got := run(p, 0, s(10), func(d time.Duration) bwe.Estimate {
		if d < s(1) {
			return link(3_000_000, s(0.75))
		}
		return link(800_000, d-s(0.25))
	})
	if len(got) != 2 || got[0].rung != 1 || got[1].rung != 2 {
		t.Fatalf("changes %v; want two steps down", got)
	}
	if gap := got[1].at - got[0].at; gap < MinSwitchGap {
		t.Fatalf("steps %v apart; want at least %v", gap, MinSwitchGap)
	}
}

func TestPolicySkipsToTheRungThatFits(t *testing.T) {
	p := NewPolicy([]int{4_000_000, 1_500_000, 600_000}, t0)
	got := run(p, 0, s(2), func(time.Duration) bwe.Estimate { return link(700_000, s(0.1)) })
	if len(got) != 1 || got[0].rung != 2 {
		t.Fatalf("changes %v; want one move to the lowest rung", got)
	}
}

func TestPolicyPinnedStaysPinned(t *testing.T) {
	p := NewPolicy([]int{2_500_000, 700_000}, t0)
	p.Pin(1, t0)
	if got := run(p, 0, s(60), func(time.Duration) bwe.Estimate { return link(20_000_000) }); len(got) != 1 || got[0].rung != 1 {
		t.Fatalf("changes %v; want the pinned rung at once and nothing else", got)
	}
	p.Pin(0, t0.Add(s(60)))
	if got := run(p, s(60), s(120), func(time.Duration) bwe.Estimate { return link(300_000, s(61)) }); len(got) != 1 || got[0].rung != 0 {
		t.Fatalf("changes %v; a viewer pinned to the source on a congested link stays on it", got)
	}
	p.Pin(-1, t0.Add(s(120)))
	if got := run(p, s(120), s(123), func(time.Duration) bwe.Estimate { return link(300_000, s(120.5)) }); len(got) != 1 || got[0].rung != 1 {
		t.Fatalf("changes %v; unpinned, the estimate chooses again", got)
	}
}

// runProbed is run for a viewer whose sender probes: every cluster the
// policy asks for is answered half a second later as a link of
// linkRate(d) bit/s would answer it (it arrives at the lesser of its
// rate and the link's). It returns the changes and when clusters were
// asked for.
func runProbed(p *Policy, to time.Duration, linkRate func(time.Duration) int64, est func(time.Duration) bwe.Estimate) (changes []change, probes []time.Duration) {
	p.Probes = true
	prev := p.Current()
	var pending *bwe.ProbeResult
	var due time.Duration
	for d := time.Duration(0); d <= to; d += 250 * time.Millisecond {
		if pending != nil && d >= due {
			p.Probed(*pending, t0.Add(d))
			pending = nil
		}
		if r := p.Decide(est(d), int64(p.Rates[p.Current()]), t0, t0.Add(d)); r != prev {
			changes = append(changes, change{d, r})
			prev = r
		}
		if bps := p.TakeProbe(); bps > 0 {
			probes = append(probes, d)
			pending = &bwe.ProbeResult{Sent: int64(bps), Received: min(int64(bps), linkRate(d)), Packets: 110, Valid: true}
			due = d + 500*time.Millisecond
		}
	}
	return changes, probes
}

// Behind 1 Mbit/s for two minutes: the viewer goes down and never up;
// its clusters, which cost it nothing, come every ProbeFailedMax.
func TestPolicyBadProbeNoTry(t *testing.T) {
	p := NewPolicy([]int{2_500_000, 700_000}, t0)
	got, probes := runProbed(p, s(120), func(time.Duration) int64 { return 1_000_000 },
		func(time.Duration) bwe.Estimate { return link(1_000_000, s(0.5)) })
	t.Logf("changes %v, clusters at %v", got, probes)
	if len(got) != 1 || got[0].rung != 1 {
		t.Fatalf("changes %v; want one move down and no try of the source", got)
	}
	if len(probes) < 2 || probes[0]-got[0].at < ProbeAfter {
		t.Fatalf("clusters at %v; want the first %v after the move down, then more", probes, ProbeAfter)
	}
	for i := 1; i < len(probes); i++ {
		if gap := probes[i] - probes[i-1]; gap < ProbeFailedMax || gap > ProbeFailedMax+s(1) {
			t.Fatalf("clusters at %v: %v between two, want the wait after a failed one (%v)", probes, gap, ProbeFailedMax)
		}
	}
}

// The link recovers to 4 Mbit/s at 30 s: the next cluster arrives at its
// rate and the viewer moves up on it, not before.
func TestPolicyUpOnlyAfterGoodProbe(t *testing.T) {
	p := NewPolicy([]int{2_500_000, 700_000}, t0)
	linkRate := func(d time.Duration) int64 {
		if d < s(30) {
			return 1_000_000
		}
		return 4_000_000
	}
	got, probes := runProbed(p, s(90), linkRate, func(d time.Duration) bwe.Estimate { return link(1_000_000, s(0.5)) })
	t.Logf("changes %v, clusters at %v", got, probes)
	if len(got) != 2 || got[0].rung != 1 || got[1].rung != 0 {
		t.Fatalf("changes %v; want down, then up once", got)
	}
	var good time.Duration = -1
	for _, at := range probes {
		if at >= s(30) {
			good = at
			break
		}
	}
	if good < 0 || got[1].at != good+500*time.Millisecond || got[1].at > s(30)+ProbeFailedMax+s(1) {
		t.Fatalf("up at %v; want it when the first cluster after the recovery (asked at %v) came back", got[1].at, good)
	}
}

// A viewer without transport-cc has nothing to probe with: the timed
// try it always had.
func TestPolicyNoTransportCCTimedTry(t *testing.T) {
	p := NewPolicy([]int{2_500_000, 700_000}, t0)
	p.Probes = true
	rr := func(d time.Duration) bwe.Estimate {
		e := link(1_050_000, s(0.5))
		e.Source = bwe.SourceReceiverReports
		return e
	}
	got := run(p, 0, s(20), rr)
	if len(got) != 2 || got[1].rung != 0 || p.TakeProbe() != 0 {
		t.Fatalf("changes %v; want down, then a timed try up without a cluster", got)
	}
}
