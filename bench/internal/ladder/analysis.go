package ladder

import (
	"fmt"
	"math"
)

// SaturationCPU is the server CPU, in % of one core, the ladder treats as
// the ceiling: above it latency spikes and drops begin on a loaded core.
const SaturationCPU = 80.0

// Verdicts of a ladder step.
const (
	VerdictOK        = "ok"
	VerdictDegraded  = "degraded"  // a viewer was not verified or frames were dropped
	VerdictSaturated = "saturated" // server CPU at or above SaturationCPU
)

// Step is one rung of the ladder.
type Step struct {
	N             int     `json:"n"`
	Connected     int     `json:"connected"`
	Verified      int     `json:"verified"`
	Failed        int     `json:"failedToConnect"`
	CPUMean       float64 `json:"cpuMeanPct"`
	CPUPeak       float64 `json:"cpuPeakPct"`
	RSSMiB        float64 `json:"rssMiB"`
	KbpsPerViewer float64 `json:"kbpsPerViewer"` // video
	Loss          float64 `json:"loss"`          // video
	Packets       uint64  `json:"videoPackets"`  // over the hold, all viewers
	Bytes         uint64  `json:"videoBytes"`
	// The audio track, when the ladder offered it.
	AudioKbpsPerViewer float64  `json:"audioKbpsPerViewer,omitempty"`
	AudioLoss          float64  `json:"audioLoss,omitempty"`
	AudioPackets       uint64   `json:"audioPackets,omitempty"`
	AudioBytes         uint64   `json:"audioBytes,omitempty"`
	Drops              *float64 `json:"drops"`    // nil: the server exports no drop counter
	SRTRTTms           *float64 `json:"srtRttMs"` // nil: not exported
	GenCPU             float64  `json:"generatorCpuPct"`
	// Frames the server dropped because a viewer's receiver reports
	// showed heavy loss (its congestion rule); part of Drops.
	CongestedDrops *float64 `json:"congestedDrops,omitempty"`
	// Datagrams the kernel dropped on the server's media socket during
	// the hold: incoming (viewers' RTCP, a full receive buffer) and
	// outgoing (a full send buffer); nil when not exported.
	SocketReceiveDrops *float64 `json:"socketReceiveDrops,omitempty"`
	SocketSendRefused  *float64 `json:"socketSendRefused,omitempty"`
	// Video pauses longer than 200 ms over all viewers during the hold.
	Stalls uint64 `json:"stalls"`
	// What the viewers sent back (browser mode; NACKs from light viewers).
	ReportsPerViewerSecond float64  `json:"rtcpReportsPerViewerSecond,omitempty"`
	NACKed                 uint64   `json:"packetsNacked,omitempty"`
	PLIs                   uint64   `json:"plisSent,omitempty"`
	RTCPUnsent             uint64   `json:"rtcpUnsent,omitempty"`
	Verdict                string   `json:"verdict"`
	Why                    []string `json:"why,omitempty"` // first reasons viewers were not verified
}

// Judge sets the step's verdict. Saturation wins over degradation because
// it names the cause.
func (s *Step) Judge() {
	degraded := s.Verified < s.N || (s.Drops != nil && *s.Drops > 0)
	switch {
	case s.CPUMean >= SaturationCPU:
		s.Verdict = VerdictSaturated
	case degraded:
		s.Verdict = VerdictDegraded
	default:
		s.Verdict = VerdictOK
	}
}

// Saturated reports whether the ladder must stop after this step: the
// server is at its ceiling or viewers no longer get the stream intact.
func (s *Step) Saturated() bool { return s.Verdict != VerdictOK }

// Fit is the least-squares line y = intercept + slope·x; ok is false with
// fewer than two distinct x.
func Fit(x, y []float64) (slope, intercept float64, ok bool) {
	n := float64(len(x))
	if len(x) < 2 || len(x) != len(y) {
		return 0, 0, false
	}
	var sx, sy, sxx, sxy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
		sxx += x[i] * x[i]
		sxy += x[i] * y[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0, 0, false
	}
	slope = (n*sxy - sx*sy) / d
	return slope, (sy - slope*sx) / n, true
}

// Crossing is where server CPU reaches SaturationCPU.
type Crossing struct {
	N            float64 `json:"n"`
	Known        bool    `json:"known"`
	Extrapolated bool    `json:"extrapolated"`
	Below        bool    `json:"atOrBelowFirstStep"` // already crossed at the first step
}

func (c Crossing) String() string {
	switch {
	case !c.Known:
		return "n/a (CPU did not grow with viewers)"
	case c.Below:
		return fmt.Sprintf("≤ %.0f (crossed at the first step)", c.N)
	case c.Extrapolated:
		return fmt.Sprintf("%.0f (extrapolated from the marginal CPU per viewer; never reached)", c.N)
	}
	return fmt.Sprintf("%.0f (interpolated between steps)", c.N)
}

// Cross80 finds the N where mean server CPU crosses SaturationCPU: linear
// interpolation between the two steps around it, or, when no step reached
// it, extrapolation from the last step along slope (% per viewer).
func Cross80(steps []Step, slope float64) Crossing {
	for i, s := range steps {
		if s.CPUMean < SaturationCPU {
			continue
		}
		if i == 0 {
			return Crossing{N: float64(s.N), Known: true, Below: true}
		}
		p := steps[i-1]
		if s.CPUMean == p.CPUMean || s.N == p.N {
			return Crossing{N: float64(s.N), Known: true}
		}
		n := float64(p.N) + (SaturationCPU-p.CPUMean)*float64(s.N-p.N)/(s.CPUMean-p.CPUMean)
		return Crossing{N: n, Known: true}
	}
	if len(steps) == 0 || slope <= 0 {
		return Crossing{}
	}
	last := steps[len(steps)-1]
	return Crossing{N: float64(last.N) + (SaturationCPU-last.CPUMean)/slope, Known: true, Extrapolated: true}
}

// Summary is the ladder's conclusion.
type Summary struct {
	Cross80          Crossing `json:"cross80"`
	MarginalCPU      float64  `json:"marginalCpuPctPerViewer"` // server, % of one core per viewer
	FitIntercept     float64  `json:"fitInterceptPct"`         // the fit's server CPU at N = 0
	MarginalOK       bool     `json:"marginalKnown"`
	GenPerViewer     float64  `json:"generatorCpuPctPerViewer"`
	ServerPerViewer  float64  `json:"serverCpuPctPerViewerAtTop"` // CPU/N at the largest step
	Invalid          bool     `json:"invalid"`
	InvalidReason    string   `json:"invalidReason,omitempty"`
	StepsUsedInSlope []int    `json:"stepsUsedInSlope"`

	// Memory: least squares of RSS against N over the same steps, and
	// RSS at N = RSSRefN, measured there or interpolated between the
	// steps around it (nil: no step at or beyond it).
	RSSPerViewerMiB float64  `json:"rssMiBPerViewer"`
	RSSInterceptMiB float64  `json:"rssFitInterceptMiB"`
	RSSFitOK        bool     `json:"rssFitKnown"`
	RSSAtRefMiB     *float64 `json:"rssMiBAt200,omitempty"`
	Stalls          uint64   `json:"stalls"` // over every step's hold
}

// RSSRefN is the viewer count the memory goal is stated at (issue 13:
// ≤ 100 MB at 200 viewers).
const RSSRefN = 200

// rssAt is the RSS at n: a step's, or interpolated between the two steps
// around it.
func rssAt(steps []Step, n int) *float64 {
	for i, s := range steps {
		if s.N == n {
			v := s.RSSMiB
			return &v
		}
		if s.N > n && i > 0 && steps[i-1].N < n {
			p := steps[i-1]
			v := p.RSSMiB + (s.RSSMiB-p.RSSMiB)*float64(n-p.N)/float64(s.N-p.N)
			return &v
		}
	}
	return nil
}

// Summarize computes the marginal CPU per viewer (least-squares slope over
// the steps that were not saturated, falling back to every step below the
// ceiling), the 80% point, the generator's cost per viewer and whether the
// run is valid: the generator must cost at most a third of the server per
// viewer, or the instrument is measuring itself.
func Summarize(steps []Step) Summary {
	var sum Summary
	pick := func(keep func(Step) bool) (xs, ys, gs, rs []float64, ns []int) {
		for _, s := range steps {
			if keep(s) {
				xs = append(xs, float64(s.N))
				ys = append(ys, s.CPUMean)
				gs = append(gs, s.GenCPU)
				rs = append(rs, s.RSSMiB)
				ns = append(ns, s.N)
			}
		}
		return
	}
	xs, ys, gs, rs, ns := pick(func(s Step) bool { return s.Verdict == VerdictOK })
	if len(xs) < 2 {
		xs, ys, gs, rs, ns = pick(func(s Step) bool { return s.CPUMean < SaturationCPU })
	}
	if len(xs) < 2 {
		xs, ys, gs, rs, ns = pick(func(Step) bool { return true })
	}
	sum.StepsUsedInSlope = ns
	sum.MarginalCPU, sum.FitIntercept, sum.MarginalOK = Fit(xs, ys)
	sum.RSSPerViewerMiB, sum.RSSInterceptMiB, sum.RSSFitOK = Fit(xs, rs)
	sum.RSSAtRefMiB = rssAt(steps, RSSRefN)
	for _, s := range steps {
		sum.Stalls += s.Stalls
	}
	sum.Cross80 = Cross80(steps, sum.MarginalCPU)

	// The generator's cost: the larger of its own slope and its total cost
	// per viewer at the largest step, so fixed overhead cannot hide.
	genSlope, _, _ := Fit(xs, gs)
	var top *Step
	for i := range steps {
		if steps[i].N > 0 && (top == nil || steps[i].N > top.N) {
			top = &steps[i]
		}
	}
	sum.GenPerViewer = math.Max(genSlope, 0)
	if top != nil {
		sum.GenPerViewer = math.Max(sum.GenPerViewer, top.GenCPU/float64(top.N))
		sum.ServerPerViewer = top.CPUMean / float64(top.N)
	}

	switch {
	case !sum.MarginalOK || sum.MarginalCPU <= 0:
		sum.Invalid = true
		sum.InvalidReason = "the server's marginal CPU per viewer could not be measured (need two or more steps with CPU growing), so the generator's share is unknown"
	case sum.GenPerViewer > sum.MarginalCPU/3:
		sum.Invalid = true
		sum.InvalidReason = fmt.Sprintf("the generator costs %.3f%% of a core per viewer, more than a third of the server's %.3f%%: it limits or disturbs the measurement",
			sum.GenPerViewer, sum.MarginalCPU)
	}
	return sum
}
