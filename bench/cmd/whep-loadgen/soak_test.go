package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestSoakTrends(t *testing.T) {
	lim := soakLimits{RSS: 16 << 20, Goroutines: 50, FDs: 20}
	const mib = 1 << 20
	// series makes an hour of samples; rss and g give the trend under
	// test, in MiB and goroutines at minute i.
	series := func(rss, g func(i int) float64) []soakSample {
		ss := make([]soakSample, 60)
		for i := range ss {
			// A sawtooth of 8 MiB, as the Go heap makes between GCs.
			saw := float64(i%2) * 8
			ss[i] = soakSample{
				At:         time.Duration(i+1) * time.Minute,
				Anon:       uint64((80 + saw + rss(i)) * mib),
				Goroutines: 1500 + g(i),
				FDs:        15 + i%3,
			}
		}
		return ss
	}
	flat := func(int) float64 { return 0 }
	cases := []struct {
		name    string
		samples []soakSample
		failing []string
	}{
		{"flat with GC sawtooth", series(flat, flat), nil},
		{"RSS leak 1 MiB/min", series(func(i int) float64 { return float64(i) }, flat), []string{"anon RSS"}},
		{"goroutine leak 3/min", series(flat, func(i int) float64 { return 3 * float64(i) }), []string{"goroutines"}},
		// Caches filling once in the first half are not a leak.
		{"warm-up then flat", series(
			func(i int) float64 { return 2 * float64(min(i, 29)) },
			func(i int) float64 { return 10 * float64(min(i, 29)) }), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			trends, err := soakTrends(c.samples, lim)
			if err != nil {
				t.Fatal(err)
			}
			var failing []string
			for _, tr := range trends {
				if tr.Failed() {
					failing = append(failing, tr.Name)
				}
			}
			if strings.Join(failing, ",") != strings.Join(c.failing, ",") {
				t.Fatalf("rising %v, want %v: %v", failing, c.failing, trends)
			}
		})
	}
	if _, err := soakTrends(series(flat, flat)[:5], lim); err == nil {
		t.Error("a trend from 5 samples was accepted")
	}
	noMetrics := series(flat, flat)
	for i := range noMetrics {
		noMetrics[i].Goroutines = -1
	}
	trends, err := soakTrends(noMetrics, lim)
	if err != nil || !trends[1].Failed() {
		t.Errorf("a soak without goroutine samples passed: %v %v", trends, err)
	}
}

func TestSoakUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"soak"}, "-server is required"},
		{[]string{"soak", "-server", "x", "-duration", "3m", "-every", "1m"}, "at least 6"},
	} {
		var stderr strings.Builder
		if code := realMain(c.args, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}
