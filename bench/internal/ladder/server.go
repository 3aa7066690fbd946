package ladder

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/procfs"

	"github.com/srtwhep/srtwhep/bench/internal/loadgen"
)

// server reads the measured process's CPU time and RSS from /proc.
type server struct{ proc procfs.Proc }

func openServer(pid int) (server, error) {
	if pid <= 0 {
		return server{}, fmt.Errorf("ladder: needs the server's PID (-pid)")
	}
	p, err := procfs.NewProc(pid)
	if err != nil {
		return server{}, fmt.Errorf("ladder: server PID %d: %w (is the PID right and the process running?)", pid, err)
	}
	s := server{proc: p}
	if _, _, err := s.read(); err != nil {
		return server{}, err
	}
	return s, nil
}

// read returns user+system CPU time and RSS in bytes; one /proc/PID/stat
// read has both.
func (s server) read() (time.Duration, uint64, error) {
	st, err := s.proc.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("ladder: server PID %d: %w", s.proc.PID, err)
	}
	return time.Duration(st.CPUTime() * float64(time.Second)), uint64(st.ResidentMemory()), nil
}

// usage is what the server process spent over one hold.
type usage struct {
	CPUMean float64 // % of one core over the whole hold
	CPUPeak float64 // highest one-second sample
	RSS     uint64  // highest sample, bytes
	Err     error   // first failed read: the server may have exited
}

// watch samples the server every second for d, or until ctx ends.
func (s server) watch(ctx context.Context, d time.Duration) usage {
	var u usage
	sample := func() (time.Duration, bool) {
		cpu, rss, err := s.read()
		if err != nil {
			if u.Err == nil {
				u.Err = err
			}
			return 0, false
		}
		u.RSS = max(u.RSS, rss)
		return cpu, true
	}
	start := time.Now()
	cpu0, ok0 := sample()
	prev, prevAt := cpu0, start

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
			if cpu, ok := sample(); ok {
				u.CPUPeak = max(u.CPUPeak, loadgen.CPUPercent(cpu-prev, now.Sub(prevAt)))
				prev, prevAt = cpu, now
			}
		}
	}
	if cpu1, ok := sample(); ok && ok0 {
		u.CPUMean = loadgen.CPUPercent(cpu1-cpu0, time.Since(start))
		// A hold shorter than the sampling tick still has a peak.
		u.CPUPeak = max(u.CPUPeak, u.CPUMean)
	}
	return u
}
