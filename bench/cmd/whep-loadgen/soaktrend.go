package main

import (
	"fmt"
	"io"
	"time"

	"github.com/srtwhep/srtwhep/bench/internal/ladder"
)

// soakSample is the server as seen at one minute of a soak.
type soakSample struct {
	At  time.Duration // since the soak started
	RSS uint64        // bytes
	// Anon is the anonymous part of RSS (heap, stacks, C allocations).
	// RSS also counts the binary's and libraries' file pages, which are
	// faulted in as code paths are first used and dropped and re-read
	// under memory pressure from other processes: they move without
	// anything leaking, so the trend is judged on Anon.
	Anon       uint64
	Goroutines float64 // -1 when the metrics scrape failed
	FDs        int
	CPU        float64 // % of one core since the previous sample
	Viewers    int     // sessions alive when sampled
	Opened     int     // sessions opened so far
	Failed     int     // offers that failed so far (a publisher gap makes some)
	// Restarts counts publisher stops so far, scheduled or not: an ffmpeg
	// the server refuses (a path still busy after a SIGKILL) exits at once
	// and is started again after the reconnect gap, as an encoder would.
	Restarts int
}

func writeSoakHeader(w io.Writer) {
	fmt.Fprintf(w, "%8s %8s %9s %10s %5s %6s %7s %7s %6s %8s\n",
		"elapsed", "rss_MiB", "anon_MiB", "goroutines", "fds", "cpu%", "viewers", "opened", "failed", "restarts")
}

func writeSoakLine(w io.Writer, s soakSample) {
	fmt.Fprintf(w, "%8s %8.1f %9.1f %10.0f %5d %6.1f %7d %7d %6d %8d\n",
		s.At.Round(time.Second), float64(s.RSS)/(1<<20), float64(s.Anon)/(1<<20), s.Goroutines, s.FDs, s.CPU,
		s.Viewers, s.Opened, s.Failed, s.Restarts)
}

// soakLimits are the largest rises over the second half of a soak that
// still count as flat. The first half is left out because caches (the GOP
// cache, pion's buffer pools, the Go heap's own growth to its GC target)
// fill there once and then stay.
type soakLimits struct {
	RSS        float64 // bytes, of anonymous RSS
	Goroutines float64
	FDs        float64
}

// trend is the least-squares rise of one series over the second half.
type trend struct {
	Name  string
	Rise  float64 // slope × the span of the second half, in the series' unit
	Limit float64
	Unit  string
}

func (t trend) Failed() bool { return t.Rise > t.Limit }

func (t trend) String() string {
	verdict := "flat"
	if t.Failed() {
		verdict = "RISING"
	}
	return fmt.Sprintf("%s: %+.1f%s over the second half (limit %.0f%s): %s", t.Name, t.Rise, t.Unit, t.Limit, t.Unit, verdict)
}

// soakTrends fits a line through the second half of the samples (at least
// three points) for anonymous RSS, goroutines and FDs. A least-squares rise rather
// than last minus first, because one sample taken during a publisher
// restart or a churn batch must not decide the verdict.
func soakTrends(ss []soakSample, lim soakLimits) ([]trend, error) {
	if len(ss) < 6 {
		return nil, fmt.Errorf("%d samples: a trend needs at least 6 (run longer than 6 sample intervals)", len(ss))
	}
	half := ss[len(ss)/2:]
	span := (half[len(half)-1].At - half[0].At).Seconds()
	fit := func(name, unit string, limit, scale float64, y func(soakSample) float64) trend {
		var xs, ys []float64
		for _, s := range half {
			if v := y(s); v >= 0 {
				xs = append(xs, s.At.Seconds())
				ys = append(ys, v/scale)
			}
		}
		slope, _, ok := ladder.Fit(xs, ys)
		if !ok {
			// No usable points (the metrics scrape always failed): say so
			// through an impossible rise rather than passing silently.
			return trend{Name: name + " (no samples)", Rise: limit/scale + 1, Limit: limit / scale, Unit: unit}
		}
		return trend{Name: name, Rise: slope * span, Limit: limit / scale, Unit: unit}
	}
	return []trend{
		fit("anon RSS", " MiB", lim.RSS, 1<<20, func(s soakSample) float64 { return float64(s.Anon) }),
		fit("goroutines", "", lim.Goroutines, 1, func(s soakSample) float64 { return s.Goroutines }),
		fit("open FDs", "", lim.FDs, 1, func(s soakSample) float64 { return float64(s.FDs) }),
	}, nil
}
