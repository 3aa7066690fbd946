package loadgen

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// LadderConfig configures a capacity ladder.
type LadderConfig struct {
	Pool     Config
	Criteria Criteria
	Steps    []int         // concurrencies, ascending
	Rate     float64       // new sessions per second; 0 means 20
	Hold     time.Duration // measured window per step; 0 means 20 s
	Settle   time.Duration // wait after media flows before measuring; 0 means 2 s
	Server   Proc          // the server process (PID required)
	Metrics  string        // the server's /metrics URL; "" skips drops and RTT
	Progress io.Writer     // one line per step as it finishes; nil discards
}

// LadderReport is the outcome of RunLadder, written out as markdown,
// JSON and a PNG.
type LadderReport struct {
	URL          string         `json:"url"`
	Started      time.Time      `json:"started"`
	Hold         time.Duration  `json:"holdNs"`
	Rate         float64        `json:"rampPerSecond"`
	PlannedSteps []int          `json:"plannedSteps"`
	Steps        []Step         `json:"steps"`
	Summary      Summary        `json:"summary"`
	StoppedEarly string         `json:"stoppedEarly,omitempty"`
	Failures     map[string]int `json:"connectFailures,omitempty"`
	Lost         int            `json:"sessionsEndedByThemselves"`
}

// RunLadder steps through cfg.Steps, keeping the sessions of earlier steps,
// and measures the server at each. Step 0 (publisher only, no viewer) is
// measured first so the 80% point can be interpolated below the first step.
// It stops after the first step that is not "ok".
func RunLadder(ctx context.Context, cfg LadderConfig) (*LadderReport, error) {
	if cfg.Server.PID <= 0 {
		return nil, fmt.Errorf("loadgen: ladder needs the server's PID (-pid)")
	}
	if _, err := cfg.Server.CPU(); err != nil {
		return nil, err
	}
	if cfg.Hold <= 0 {
		cfg.Hold = 20 * time.Second
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 2 * time.Second
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	pool, err := NewPool(cfg.Pool)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	httpc := &http.Client{Timeout: 5 * time.Second}
	defer httpc.CloseIdleConnections()

	rep := &LadderReport{URL: cfg.Pool.URL, Started: time.Now(), Hold: cfg.Hold, Rate: cfg.Rate, PlannedSteps: cfg.Steps}
	steps := append([]int{0}, cfg.Steps...)
	for i, n := range steps {
		if err := ctx.Err(); err != nil {
			rep.StoppedEarly = "interrupted: " + err.Error()
			break
		}
		var failed int
		hold := cfg.Hold
		if n == 0 {
			hold = min(cfg.Hold, 5*time.Second)
		} else {
			_, failed = pool.Grow(ctx, n, cfg.Rate)
			pool.WaitFlowing(ctx, 10*time.Second)
			if !waitCtx(ctx, cfg.Settle) {
				continue // reported as interrupted at the top
			}
		}
		st := runStep(ctx, pool, n, hold, cfg, httpc)
		st.Failed = failed
		st.Judge()
		rep.Steps = append(rep.Steps, st)
		fmt.Fprintf(progress, "step N=%d: connected %d, verified %d, server CPU %.1f%% (peak %.1f%%), generator %.1f%%: %s\n",
			st.N, st.Connected, st.Verified, st.CPUMean, st.CPUPeak, st.GenCPU, st.Verdict)
		if st.Saturated() && i < len(steps)-1 {
			rep.StoppedEarly = fmt.Sprintf("step N=%d was %s", n, st.Verdict)
			break
		}
	}
	rep.Summary = Summarize(rep.Steps)
	rep.Failures, rep.Lost = pool.Failures()
	return rep, nil
}

func waitCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func runStep(ctx context.Context, pool *Pool, n int, hold time.Duration, cfg LadderConfig, httpc *http.Client) Step {
	st := Step{N: n}
	var m0 map[string]Sample
	if cfg.Metrics != "" {
		m0, _ = Scrape(ctx, httpc, cfg.Metrics, MetricFramesDropped, MetricSRTRTT)
	}
	m := measure(ctx, pool, hold, &cfg.Server)
	if cfg.Metrics != "" {
		m1, err := Scrape(ctx, httpc, cfg.Metrics, MetricFramesDropped, MetricSRTRTT)
		if err == nil {
			if a, b := m0[MetricFramesDropped], m1[MetricFramesDropped]; a.Found && b.Found {
				d := max(b.Sum-a.Sum, 0)
				st.Drops = &d
			}
			if r := m1[MetricSRTRTT]; r.Found {
				ms := r.Max * 1000
				st.SRTRTTms = &ms
			}
		}
	}
	st.CPUMean, st.CPUPeak = m.ServerCPUMean, m.ServerCPUPeak
	st.RSSMiB = float64(m.ServerRSS) / (1 << 20)
	st.GenCPU = m.GenCPU

	var kbps float64
	var pkts, gaps uint64
	for i, w := range m.Windows(cfg.Criteria) {
		if m.After[i].Alive {
			st.Connected++
		}
		if w.Verified {
			st.Verified++
		} else if len(st.Why) < 5 {
			st.Why = append(st.Why, fmt.Sprintf("session %d: %s", m.Sessions[i].ID, w.Reason))
		}
		kbps += w.Kbps
		pkts += w.Packets
		gaps += w.Gaps
	}
	if len(m.Sessions) > 0 {
		st.KbpsPerViewer = kbps / float64(len(m.Sessions))
	}
	if pkts+gaps > 0 {
		st.Loss = float64(gaps) / float64(pkts+gaps)
	}
	return st
}
