package bwe

import (
	"math/rand/v2"
	"testing"
	"time"
)

// sample is the estimate at one moment of a trace.
type sample struct {
	at  time.Duration
	est Estimate
}

// replay runs our estimator over a trace, sampling it after every
// feedback.
func replay(evs []event, rtt time.Duration) []sample {
	start := time.Unix(1_000_000, 0)
	var log SendLog
	g := NewGCC()
	var acks []Ack
	var out []sample
	for _, ev := range evs {
		if ev.fb == nil {
			log.Record(ev.seq, ev.at, ev.size)
			continue
		}
		now := start.Add(ev.at)
		acks = log.Acks(ev.fb, acks[:0])
		g.Update(now, acks, rtt)
		out = append(out, sample{ev.at, g.Estimate(now)})
	}
	return out
}

// at is the last sample at or before t.
func at(s []sample, t time.Duration) Estimate {
	var e Estimate
	for _, x := range s {
		if x.at > t {
			break
		}
		e = x.est
	}
	return e
}

// lowest is the lowest estimate in [from, to].
func lowest(s []sample, from, to time.Duration) int64 {
	low := int64(-1)
	for _, x := range s {
		if x.at >= from && x.at <= to && (low < 0 || x.est.Bitrate < low) {
			low = x.est.Bitrate
		}
	}
	return low
}

const mbit = 1_000_000

// scenarios are the four traces of the issue, each with what any GCC
// must estimate on it; TestAgainstPion holds pion's estimator to the
// same.
var scenarios = []struct {
	name  string
	link  func() *link
	check func(t *testing.T, s []sample)
}{
	{"steady", func() *link {
		return &link{rate: constant(5 * mbit), queue: 200 * time.Millisecond, prop: 20 * time.Millisecond}
	}, func(t *testing.T, s []sample) {
		// A 2.5 Mbit/s stream over a 5 Mbit/s link: the estimate knows
		// the stream gets through, and never cuts.
		if e := at(s, 3*time.Second); e.Bitrate < 2.2*mbit {
			t.Errorf("estimate after 3 s %d, want at least the 2.5 Mbit/s that got through", e.Bitrate)
		}
		if low := lowest(s, 3*time.Second, 20*time.Second); low < 2.2*mbit {
			t.Errorf("estimate fell to %d on a link with headroom", low)
		}
	}},
	{"step down", func() *link {
		return &link{rate: step(5*mbit, 1*mbit, 10*time.Second), queue: 200 * time.Millisecond, prop: 20 * time.Millisecond}
	}, func(t *testing.T, s []sample) {
		if e := at(s, 10*time.Second); e.Bitrate < 2.2*mbit {
			t.Errorf("estimate before the drop %d, want ≥ 2.2 Mbit/s", e.Bitrate)
		}
		e := at(s, 13*time.Second)
		if e.Bitrate >= 1.2*mbit || e.Bitrate < 0.4*mbit {
			t.Errorf("estimate 3 s after the link fell to 1 Mbit/s: %d, want within [0.4, 1.2) Mbit/s", e.Bitrate)
		}
		if e.LastDecrease.IsZero() {
			t.Error("no decrease recorded")
		}
		if e := at(s, 20*time.Second); e.Bitrate >= 1.2*mbit || e.Bitrate < 0.4*mbit {
			t.Errorf("estimate at the end %d, want within [0.4, 1.2) Mbit/s", e.Bitrate)
		}
	}},
	{"step up", func() *link {
		return &link{rate: step(1*mbit, 5*mbit, 10*time.Second), queue: 200 * time.Millisecond, prop: 20 * time.Millisecond}
	}, func(t *testing.T, s []sample) {
		if e := at(s, 10*time.Second); e.Bitrate >= 1.2*mbit {
			t.Errorf("estimate on the 1 Mbit/s link %d, want < 1.2 Mbit/s", e.Bitrate)
		}
		if e := at(s, 20*time.Second); e.Bitrate < 2.2*mbit {
			t.Errorf("estimate 10 s after the link rose to 5 Mbit/s: %d, want ≥ 2.2 Mbit/s", e.Bitrate)
		}
	}},
	{"loss without congestion", func() *link {
		return &link{rate: constant(10 * mbit), queue: 200 * time.Millisecond, prop: 20 * time.Millisecond,
			loss: 0.05, rng: rand.New(rand.NewPCG(1, 2))}
	}, func(t *testing.T, s []sample) {
		// 5 % random loss is a noisy link, not a full one: the estimate
		// stays at what gets through.
		if low := lowest(s, 3*time.Second, 20*time.Second); low < 2.0*mbit {
			t.Errorf("estimate fell to %d under 5 %% random loss without a queue", low)
		}
	}},
}

func TestGCC(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			s := replay(trace(sc.link(), 2.5*mbit, 20*time.Second), 40*time.Millisecond)
			for sec := time.Second; sec <= 20*time.Second; sec += 2 * time.Second {
				e := at(s, sec)
				t.Logf("%5v %8d bit/s %v", sec, e.Bitrate, e.Trend)
			}
			sc.check(t, s)
		})
	}
}

// TestReportLoss: the fallback on receiver reports cuts to most of what
// was delivered under heavy loss, holds under moderate loss, and grows
// to 1.5 times the sent rate on a clean link.
func TestReportLoss(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	var r ReportLoss
	if e := r.Estimate(start); e.Bitrate != 0 || e.Source != SourceNone {
		t.Fatalf("estimate before any report: %+v", e)
	}
	sec := func(i int) time.Time { return start.Add(time.Duration(i) * time.Second) }
	r.Update(sec(1), 0, 2.5*mbit)
	if e := r.Estimate(sec(1)); e.Bitrate != 2.5*mbit || e.Source != SourceReceiverReports {
		t.Fatalf("first estimate %+v, want the 2.5 Mbit/s delivered", e)
	}
	// A 1 Mbit/s link under a 2.5 Mbit/s stream loses 60 %.
	r.Update(sec(2), 0.6, 2.5*mbit)
	if e := r.Estimate(sec(2)); e.Bitrate >= 2.5*mbit || e.Trend != Decreasing {
		t.Fatalf("after a heavy loss report %+v, want a cut, decreasing", e)
	}
	for i := 3; i < 8; i++ {
		r.Update(sec(i), 0.6, 2.5*mbit)
	}
	e := r.Estimate(sec(7))
	if e.Bitrate >= 1.2*mbit || e.Bitrate < 0.8*mbit {
		t.Fatalf("after heavy loss %+v, want near 85 %% of the 1 Mbit/s delivered", e)
	}
	r.Update(sec(8), 0.05, 2.5*mbit)
	if h := r.Estimate(sec(10)); h.Bitrate != e.Bitrate || h.Trend != Holding {
		t.Fatalf("moderate loss changed the estimate: %+v, was %+v", h, e)
	}
	for i := 11; i < 60; i++ {
		r.Update(sec(i), 0, 2.5*mbit)
	}
	if e := r.Estimate(sec(60)); e.Bitrate != 3.75*mbit {
		t.Fatalf("clean link estimate %d, want 1.5 x the 2.5 Mbit/s sent", e.Bitrate)
	}
	// The cuts went on until the estimate reached what got through,
	// within the heavy-loss reports (seconds 2 to 7).
	if d := r.Estimate(sec(60)).SinceDecrease(sec(60), start); d < 53*time.Second || d > 58*time.Second {
		t.Fatalf("SinceDecrease %v, want 53 to 58 s", d)
	}
	var fresh ReportLoss
	if d := fresh.Estimate(sec(3)).SinceDecrease(sec(3), start); d != 3*time.Second {
		t.Fatalf("SinceDecrease without a decrease %v, want the 3 s since the start", d)
	}
}
