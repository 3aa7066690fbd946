// Package ladder finds a WHEP server's capacity: it steps a loadgen.Pool
// through rising viewer counts, measures the server process (/proc) and
// its Prometheus metrics at each step, and turns the steps into a verdict,
// a markdown table, JSON and the data of a plot of CPU against viewers
// (drawn by tools/ladderplot, which keeps the plotting library out of
// this module).
package ladder

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/srtwhep/srtwhep/bench/internal/loadgen"
)

// Config configures a capacity ladder.
type Config struct {
	Pool      loadgen.Config
	Criteria  loadgen.Criteria
	Steps     []int         // concurrencies, ascending
	Rate      float64       // new sessions per second; 0 means 20
	Hold      time.Duration // measured window per step; 0 means 20 s
	Settle    time.Duration // wait after media flows before measuring; 0 means 2 s
	ServerPID int           // the server process, read from /proc (required)
	Metrics   string        // the server's /metrics URL; "" skips drops and RTT
	Progress  io.Writer     // one line per step as it finishes; nil discards

	// Label names the server setup measured (which binary, say), so
	// ladders of several setups can be told apart and set side by side.
	Label string

	// ProfileAt takes a CPU profile of the server after the hold of the
	// step with this N (0: none), over ProfileFor (0 means 10 s), from the
	// pprof handler next to Metrics; the report keeps its top functions
	// and ProfileDir, when set, the raw profile.
	ProfileAt  int
	ProfileFor time.Duration
	ProfileDir string
}

// Report is the outcome of Run, written out as markdown, JSON and a PNG.
type Report struct {
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
	Retries      int            `json:"offersRetriedAfter503,omitempty"`
	// How the viewers were set up, which the figures depend on.
	Audio           bool   `json:"audio"`
	NACK            bool   `json:"nackOffered"`
	GRO             bool   `json:"receiverGRO"`
	ReceiverReports bool   `json:"receiverReports"`
	Mode            string `json:"viewerMode,omitempty"`
	Label           string `json:"label,omitempty"`

	// The server's CPU profile at step ProfileN: `go tool pprof -top`.
	ProfileN    int    `json:"profileN,omitempty"`
	ProfileTop  string `json:"profileTop,omitempty"`
	ProfileFile string `json:"profileFile,omitempty"`
	ProfileErr  string `json:"profileError,omitempty"`
}

// Run steps through cfg.Steps, keeping the sessions of earlier steps, and
// measures the server at each. Step 0 (publisher only, no viewer) is
// measured first so the 80% point can be interpolated below the first
// step. It stops after the first step that is not "ok".
func Run(ctx context.Context, cfg Config) (*Report, error) {
	srv, err := openServer(cfg.ServerPID)
	if err != nil {
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
	pool, err := loadgen.NewPool(cfg.Pool)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	httpc := &http.Client{Timeout: 5 * time.Second}
	defer httpc.CloseIdleConnections()

	rep := &Report{URL: cfg.Pool.URL, Started: time.Now(), Hold: cfg.Hold, Rate: cfg.Rate, PlannedSteps: cfg.Steps,
		Audio: cfg.Pool.Audio, NACK: cfg.Pool.NACK, GRO: cfg.Pool.GRO, ReceiverReports: cfg.Pool.ReceiverReports,
		Mode: string(cfg.Pool.Mode), Label: cfg.Label}
	if cfg.ProfileFor <= 0 {
		cfg.ProfileFor = 10 * time.Second
	}
	steps := append([]int{0}, cfg.Steps...)
	for i, n := range steps {
		if err := ctx.Err(); err != nil {
			rep.StoppedEarly = "interrupted: " + err.Error()
			break
		}
		var failed int
		hold := cfg.Hold
		if n == 0 {
			// The baseline only anchors the fit; it needs no long window.
			hold = min(cfg.Hold, 5*time.Second)
		} else {
			var ok bool
			if failed, ok = pool.Fill(ctx, n, cfg.Rate, cfg.Settle); !ok {
				continue // reported as interrupted at the top
			}
		}
		st, srvErr := runStep(ctx, pool, n, hold, cfg, srv, httpc)
		st.Failed = failed
		st.Judge()
		rep.Steps = append(rep.Steps, st)
		audio := ""
		if cfg.Pool.Audio {
			audio = fmt.Sprintf(", audio %.0f kbit/s per viewer", st.AudioKbpsPerViewer)
		}
		feedback := ""
		if cfg.Pool.ReceiverReports && n > 0 {
			feedback = fmt.Sprintf(", %.2f RTCP reports/s per viewer, %d packets NACKed", st.ReportsPerViewerSecond, st.NACKed)
		}
		fmt.Fprintf(progress, "step N=%d: connected %d, verified %d, server CPU %.1f%% (peak %.1f%%), RSS %.1f MiB, generator %.1f%%, stalls %d%s%s: %s\n",
			st.N, st.Connected, st.Verified, st.CPUMean, st.CPUPeak, st.RSSMiB, st.GenCPU, st.Stalls, feedback, audio, st.Verdict)
		if n == cfg.ProfileAt && n > 0 && srvErr == nil {
			rep.ProfileN = n
			if cfg.Metrics == "" {
				rep.ProfileErr = "no -metrics URL, so no pprof endpoint to profile"
			} else {
				fmt.Fprintf(progress, "step N=%d: profiling the server's CPU for %s\n", n, cfg.ProfileFor)
				top, file, err := profileStep(ctx, cfg.Metrics, n, cfg.ProfileFor, cfg.ProfileDir)
				rep.ProfileTop, rep.ProfileFile = top, file
				if err != nil {
					rep.ProfileErr = err.Error()
				}
			}
		}
		if srvErr != nil {
			// Without the server's CPU the step's figures mean nothing.
			rep.StoppedEarly = fmt.Sprintf("step N=%d: %v", n, srvErr)
			break
		}
		if st.Saturated() && i < len(steps)-1 {
			rep.StoppedEarly = fmt.Sprintf("step N=%d was %s", n, st.Verdict)
			break
		}
	}
	if cfg.ProfileAt > 0 && rep.ProfileN == 0 {
		rep.ProfileN = cfg.ProfileAt
		rep.ProfileErr = "the ladder did not measure that step"
	}
	rep.Summary = Summarize(rep.Steps)
	rep.Failures, rep.Lost = pool.Failures()
	rep.Retries = pool.Retries()
	return rep, nil
}

// runStep measures one step; the error is a failed read of the server's
// /proc entry.
func runStep(ctx context.Context, pool *loadgen.Pool, n int, hold time.Duration, cfg Config, srv server, httpc *http.Client) (Step, error) {
	st := Step{N: n}
	var m0 map[string]Sample
	if cfg.Metrics != "" {
		m0, _ = Scrape(ctx, httpc, cfg.Metrics, MetricFramesDropped, MetricSRTRTT, MetricReceiveDrops, MetricSendRefused)
	}
	h := pool.StartHold()
	use := srv.watch(ctx, hold)
	h.Finish()
	if cfg.Metrics != "" {
		m1, err := Scrape(ctx, httpc, cfg.Metrics, MetricFramesDropped, MetricSRTRTT, MetricReceiveDrops, MetricSendRefused)
		if err == nil {
			if a, b := m0[MetricFramesDropped], m1[MetricFramesDropped]; a.Found && b.Found {
				d := max(b.Sum-a.Sum, 0)
				st.Drops = &d
				c := max(b.Label("reason", "congested")-a.Label("reason", "congested"), 0)
				st.CongestedDrops = &c
			}
			if a, b := m0[MetricReceiveDrops], m1[MetricReceiveDrops]; a.Found && b.Found {
				d := max(b.Sum-a.Sum, 0)
				st.SocketReceiveDrops = &d
			}
			if a, b := m0[MetricSendRefused], m1[MetricSendRefused]; a.Found && b.Found {
				d := max(b.Sum-a.Sum, 0)
				st.SocketSendRefused = &d
			}
			if r := m1[MetricSRTRTT]; r.Found {
				ms := r.Max * 1000
				st.SRTRTTms = &ms
			}
		}
	}
	st.CPUMean, st.CPUPeak = use.CPUMean, use.CPUPeak
	st.RSSMiB = float64(use.RSS) / (1 << 20)
	st.GenCPU = h.GenCPU
	fb := loadgen.SumFeedback(h, cfg.Criteria)
	st.Stalls, st.ReportsPerViewerSecond = fb.Stalls, fb.ReportsPerViewerSecond
	st.NACKed, st.PLIs, st.RTCPUnsent = fb.NACKed, fb.PLIs, fb.RTCPUnsent

	var kbps, akbps float64
	var gaps, agaps uint64
	for i, w := range h.Windows(cfg.Criteria) {
		if h.After[i].Alive {
			st.Connected++
		}
		if w.Verified {
			st.Verified++
		} else if len(st.Why) < 5 {
			st.Why = append(st.Why, fmt.Sprintf("session %d: %s", h.Sessions[i].ID, w.Reason))
		}
		kbps += w.Kbps
		akbps += w.AudioKbps
		st.Packets += w.Packets
		st.Bytes += h.After[i].Bytes - h.Before[i].Bytes
		gaps += w.Gaps
		st.AudioPackets += w.AudioPackets
		st.AudioBytes += w.AudioBytes
		agaps += w.AudioGaps
	}
	if len(h.Sessions) > 0 {
		st.KbpsPerViewer = kbps / float64(len(h.Sessions))
		st.AudioKbpsPerViewer = akbps / float64(len(h.Sessions))
	}
	if st.Packets+gaps > 0 {
		st.Loss = float64(gaps) / float64(st.Packets+gaps)
	}
	if st.AudioPackets+agaps > 0 {
		st.AudioLoss = float64(agaps) / float64(st.AudioPackets+agaps)
	}
	return st, use.Err
}
