package ladder

import (
	"strings"
	"testing"
)

// ladderOf is a ladder whose server CPU grows by slope % per viewer.
func ladderOf(slope float64) *Report {
	var steps []Step
	for _, n := range []int{0, 100, 200} {
		steps = append(steps, Step{N: n, Verified: n, CPUMean: 2 + slope*float64(n), GenCPU: 0.01 * float64(n), Verdict: VerdictOK})
	}
	return &Report{Steps: steps, Summary: Summarize(steps)}
}

func TestCompareAudio(t *testing.T) {
	cases := []struct {
		video, audio float64
		ratio        string
		met          bool
	}{
		{0.10, 0.11, "1.10× (+10 %)", true},
		{0.10, 0.115, "1.15× (+15 %)", true},
		{0.10, 0.13, "1.30× (+30 %)", false},
	}
	for _, tc := range cases {
		c := CompareAudio(ladderOf(tc.video), ladderOf(tc.audio))
		var b strings.Builder
		if err := c.WriteMarkdown(&b); err != nil {
			t.Fatal(err)
		}
		if !c.Known || c.Met() != tc.met || !strings.Contains(b.String(), tc.ratio) {
			t.Errorf("video %.3f, audio %.3f: known %v met %v, want met %v and %q in:\n%s",
				tc.video, tc.audio, c.Known, c.Met(), tc.met, tc.ratio, b.String())
		}
		for _, want := range []string{"| video only | 0.1000 |", "| 200/200 |"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("comparison lacks %q:\n%s", want, b.String())
			}
		}
	}

	flat := &Report{Steps: []Step{{N: 0, CPUMean: 2}}}
	flat.Summary = Summarize(flat.Steps)
	c := CompareAudio(ladderOf(0.1), flat)
	var b strings.Builder
	if err := c.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	if c.Known || c.Met() || !strings.Contains(b.String(), "n/a (a marginal cost") {
		t.Errorf("an unmeasurable ladder compared as known=%v met=%v:\n%s", c.Known, c.Met(), b.String())
	}
}
