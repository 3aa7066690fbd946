package ladder

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReportFiles(t *testing.T) {
	steps := ladderSteps(0.2)
	steps[2].Drops = nil
	rep := &Report{URL: "http://127.0.0.1:1/x/whep", Started: time.Unix(0, 0), Hold: time.Second, Rate: 20, Steps: steps,
		Summary: Summarize(steps), Failures: map[string]int{"HTTP 503": 2}}
	dir := filepath.Join(t.TempDir(), "out")
	if err := rep.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "ladder.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"INVALID", "| 200 | 0 | 200 |", "n/a", "extrapolated", "Marginal server CPU per viewer: 0.300%", "HTTP 503"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("ladder.md lacks %q:\n%s", want, md)
		}
	}
	var back Report
	js, err := os.ReadFile(filepath.Join(dir, "ladder.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatalf("ladder.json: %v", err)
	}
	if len(back.Steps) != 4 || !back.Summary.Invalid {
		t.Errorf("ladder.json round trip: %d steps, invalid=%v", len(back.Steps), back.Summary.Invalid)
	}
	var plot PlotData
	if err := decodeStrict(filepath.Join(dir, PlotFile), &plot); err != nil {
		t.Fatal(err)
	}
	if len(plot.Points) != 4 || plot.Fit == nil || plot.Cross == nil || !plot.Cross.Extrapolated || plot.SaturationCPU != SaturationCPU {
		t.Errorf("%s: %+v", PlotFile, plot)
	}
}

// TestPlotDataContract holds the ladder to the sample tools/ladderplot
// renders in its own test: a field renamed or dropped here fails there
// only if the two files are kept in step, so they are compared.
func TestPlotDataContract(t *testing.T) {
	var steps []Step
	for _, n := range []int{0, 50, 100, 200} {
		mean := 2 + 0.3*float64(n)
		s := Step{N: n, Verified: n, CPUMean: mean, CPUPeak: mean + 3, Drops: ptr(0)}
		s.Judge()
		steps = append(steps, s)
	}
	rep := &Report{Steps: steps, Summary: Summarize(steps)}
	var want PlotData
	if err := decodeStrict("../../../tools/ladderplot/testdata/"+PlotFile, &want); err != nil {
		t.Fatal(err)
	}
	got := rep.PlotData()
	if len(got.Points) != len(want.Points) || got.Fit == nil || want.Fit == nil || got.Cross == nil || want.Cross == nil {
		t.Fatalf("plot data %+v, sample %+v", got, want)
	}
	for i := range got.Points {
		g, w := got.Points[i], want.Points[i]
		if g.N != w.N || !near(g.CPUMean, w.CPUMean) || !near(g.CPUPeak, w.CPUPeak) {
			t.Errorf("point %d: %+v, sample %+v", i, got.Points[i], want.Points[i])
		}
	}
	if got.SaturationCPU != want.SaturationCPU || !near(got.Fit.Intercept, want.Fit.Intercept) || !near(got.Fit.Slope, want.Fit.Slope) ||
		!near(got.Cross.N, want.Cross.N) || got.Cross.Extrapolated != want.Cross.Extrapolated {
		t.Errorf("plot data %+v %+v %+v, sample %+v %+v %+v", got, *got.Fit, *got.Cross, want, *want.Fit, *want.Cross)
	}
}

// decodeStrict reads a JSON file, refusing keys v has no field for.
func decodeStrict(name string, v any) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func TestValidReportSaysValid(t *testing.T) {
	steps := ladderSteps(0.01)
	rep := &Report{Steps: steps, Summary: Summarize(steps)}
	var b strings.Builder
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "INVALID") || !strings.Contains(b.String(), "Validity: valid") {
		t.Errorf("valid run rendered as:\n%s", b.String())
	}
}
