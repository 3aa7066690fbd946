package loadgen

import (
	"context"
	"time"
)

// Measurement is what one hold window observed.
type Measurement struct {
	Start, End time.Time
	Sessions   []*Session
	Before     []Snapshot
	After      []Snapshot
	GenCPU     float64 // this process, % of one core over the window

	// Server figures, when a server process was given.
	ServerCPUMean float64
	ServerCPUPeak float64 // highest one-second sample
	ServerRSS     uint64  // highest sample, bytes
	ServerErr     error   // first error reading /proc
}

// Duration is the measured wall time.
func (m *Measurement) Duration() time.Duration { return m.End.Sub(m.Start) }

// measure holds for d, sampling server (if non-nil) every second. It ends
// early, with what it has, when ctx is done.
func measure(ctx context.Context, pool *Pool, d time.Duration, server *Proc) *Measurement {
	self := Proc{}
	m := &Measurement{Sessions: pool.Sessions()}
	snap := func() []Snapshot {
		out := make([]Snapshot, len(m.Sessions))
		for i, s := range m.Sessions {
			out[i] = s.Snapshot()
		}
		return out
	}
	fail := func(err error) {
		if err != nil && m.ServerErr == nil {
			m.ServerErr = err
		}
	}

	gen0, _ := self.CPU()
	var srv0, prevCPU time.Duration
	var err error
	if server != nil {
		srv0, err = server.CPU()
		fail(err)
		prevCPU = srv0
	}
	m.Start = time.Now()
	m.Before = snap()
	prevAt := m.Start

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-deadline.C:
			break loop
		case now := <-tick.C:
			if server == nil {
				continue
			}
			cpu, err := server.CPU()
			fail(err)
			if err == nil {
				m.ServerCPUPeak = max(m.ServerCPUPeak, CPUPercent(cpu-prevCPU, now.Sub(prevAt)))
				prevCPU, prevAt = cpu, now
			}
			rss, err := server.RSS()
			fail(err)
			m.ServerRSS = max(m.ServerRSS, rss)
		}
	}
	m.End = time.Now()
	m.After = snap()
	gen1, _ := self.CPU()
	m.GenCPU = CPUPercent(gen1-gen0, m.Duration())
	if server != nil {
		srv1, err := server.CPU()
		fail(err)
		if err == nil {
			m.ServerCPUMean = CPUPercent(srv1-srv0, m.Duration())
			// A window shorter than the sampling tick still has a peak.
			m.ServerCPUPeak = max(m.ServerCPUPeak, m.ServerCPUMean)
		}
		if rss, err := server.RSS(); err == nil {
			m.ServerRSS = max(m.ServerRSS, rss)
		}
	}
	return m
}

// Windows evaluates every session over the measurement.
func (m *Measurement) Windows(c Criteria) []Window {
	out := make([]Window, len(m.Sessions))
	for i, s := range m.Sessions {
		out[i] = Evaluate(m.Before[i], m.After[i], s.Decode, c)
	}
	return out
}
