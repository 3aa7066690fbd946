package ladder

import (
	"math"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func ptr(v float64) *float64 { return &v }

func TestFit(t *testing.T) {
	s, c, ok := Fit([]float64{0, 10, 20, 40}, []float64{2, 7, 12, 22})
	if !ok || !near(s, 0.5) || !near(c, 2) {
		t.Errorf("Fit = %v, %v, %v; want 0.5, 2", s, c, ok)
	}
	if _, _, ok := Fit([]float64{5}, []float64{1}); ok {
		t.Error("Fit of one point reported ok")
	}
	if _, _, ok := Fit([]float64{5, 5}, []float64{1, 2}); ok {
		t.Error("Fit with equal x reported ok")
	}
}

func TestCross80(t *testing.T) {
	steps := []Step{{N: 0, CPUMean: 2}, {N: 100, CPUMean: 40}, {N: 200, CPUMean: 90}}
	c := Cross80(steps, 0.4)
	if !c.Known || c.Extrapolated || c.Below || !near(c.N, 180) {
		t.Errorf("interpolated crossing = %+v, want N=180", c)
	}
	c = Cross80(steps[:2], 0.38)
	if !c.Known || !c.Extrapolated || !near(c.N, 100+40/0.38) {
		t.Errorf("extrapolated crossing = %+v, want N=%v", c, 100+40/0.38)
	}
	if !strings.Contains(c.String(), "extrapolated") {
		t.Errorf("String() = %q, must say extrapolated", c.String())
	}
	c = Cross80([]Step{{N: 10, CPUMean: 95}}, 1)
	if !c.Known || !c.Below || c.N != 10 {
		t.Errorf("crossing at the first step = %+v", c)
	}
	if c := Cross80(steps[:2], 0); c.Known {
		t.Errorf("crossing without slope = %+v, want unknown", c)
	}
}

func TestJudge(t *testing.T) {
	cases := []struct {
		s    Step
		want string
	}{
		{Step{N: 10, Verified: 10, CPUMean: 20, Drops: ptr(0)}, VerdictOK},
		{Step{N: 10, Verified: 10, CPUMean: 20}, VerdictOK}, // no drop metric
		{Step{N: 10, Verified: 9, CPUMean: 20}, VerdictDegraded},
		{Step{N: 10, Verified: 10, CPUMean: 20, Drops: ptr(3)}, VerdictDegraded},
		{Step{N: 10, Verified: 10, CPUMean: 80}, VerdictSaturated},
		{Step{N: 10, Verified: 2, CPUMean: 99, Drops: ptr(50)}, VerdictSaturated},
	}
	for i, c := range cases {
		c.s.Judge()
		if c.s.Verdict != c.want {
			t.Errorf("case %d: verdict %q, want %q", i, c.s.Verdict, c.want)
		}
		if c.s.Saturated() != (c.want != VerdictOK) {
			t.Errorf("case %d: Saturated() = %v", i, c.s.Saturated())
		}
	}
}

func ladderSteps(genPerViewer float64) []Step {
	var steps []Step
	for _, n := range []int{0, 50, 100, 200} {
		s := Step{N: n, Verified: n, CPUMean: 2 + 0.3*float64(n), GenCPU: genPerViewer * float64(n), Drops: ptr(0)}
		s.Judge()
		steps = append(steps, s)
	}
	return steps
}

func TestSummarizeValid(t *testing.T) {
	sum := Summarize(ladderSteps(0.05))
	if !sum.MarginalOK || !near(sum.MarginalCPU, 0.3) || !near(sum.FitIntercept, 2) {
		t.Errorf("fit = %v + %v·N (%v), want 2 + 0.3·N", sum.FitIntercept, sum.MarginalCPU, sum.MarginalOK)
	}
	if !near(sum.GenPerViewer, 0.05) {
		t.Errorf("generator per viewer = %v, want 0.05", sum.GenPerViewer)
	}
	if sum.Invalid {
		t.Errorf("run marked invalid: %s", sum.InvalidReason)
	}
	if !sum.Cross80.Extrapolated || !near(sum.Cross80.N, 260) {
		t.Errorf("crossing = %+v, want extrapolated 260", sum.Cross80)
	}
}

func TestSummarizeInvalidWhenGeneratorIsExpensive(t *testing.T) {
	sum := Summarize(ladderSteps(0.11)) // > 0.3/3
	if !sum.Invalid || !strings.Contains(sum.InvalidReason, "third") {
		t.Errorf("invalid = %v (%q), want invalid for a costly generator", sum.Invalid, sum.InvalidReason)
	}
}

func TestSummarizeFixedGeneratorCostCounts(t *testing.T) {
	// A flat 30% generator cost has slope 0 but is 0.15%/viewer at N=200.
	steps := ladderSteps(0)
	for i := range steps {
		steps[i].GenCPU = 30
	}
	sum := Summarize(steps)
	if !near(sum.GenPerViewer, 0.15) || !sum.Invalid {
		t.Errorf("generator per viewer = %v, invalid = %v; want 0.15 and invalid", sum.GenPerViewer, sum.Invalid)
	}
}

func TestSummarizeIgnoresSaturatedStepsInSlope(t *testing.T) {
	steps := ladderSteps(0.01)
	sat := Step{N: 400, Verified: 300, CPUMean: 100, CPUPeak: 100, GenCPU: 4}
	sat.Judge()
	steps = append(steps, sat)
	sum := Summarize(steps)
	if !near(sum.MarginalCPU, 0.3) {
		t.Errorf("marginal = %v, want 0.3 from the unsaturated steps", sum.MarginalCPU)
	}
	if sum.Cross80.Extrapolated || !near(sum.Cross80.N, 200+(80-62)*200/(100-62.0)) {
		t.Errorf("crossing = %+v", sum.Cross80)
	}
}

func TestSummarizeWithoutSlopeIsInvalid(t *testing.T) {
	sum := Summarize([]Step{{N: 0, CPUMean: 3, Verdict: VerdictOK}})
	if !sum.Invalid || sum.MarginalOK {
		t.Errorf("one step: invalid=%v marginalOK=%v, want invalid and unknown", sum.Invalid, sum.MarginalOK)
	}
}
