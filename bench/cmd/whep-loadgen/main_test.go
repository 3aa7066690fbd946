package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/bench/internal/ladder"
)

func TestParseSteps(t *testing.T) {
	got, err := parseSteps("10, 20,40")
	if err != nil || !slices.Equal(got, []int{10, 20, 40}) {
		t.Errorf("parseSteps = %v, %v", got, err)
	}
	for _, bad := range []string{"", "10,x", "10,5", "0,10", "-3"} {
		if _, err := parseSteps(bad); err == nil {
			t.Errorf("parseSteps(%q) accepted", bad)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{nil, "usage"},
		{[]string{"fly"}, "unknown command"},
		{[]string{"run"}, "-url is required"},
		{[]string{"run", "-url", "http://127.0.0.1:1/x/whep", "-ramp", "fast"}, "-ramp"},
		{[]string{"ladder", "-url", "http://127.0.0.1:1/x/whep"}, "-pid is required"},
		{[]string{"ladder", "-url", "http://127.0.0.1:1/x/whep", "-pid", "1", "-steps", "5,4"}, "ascend"},
		{[]string{"plotdata", "-in", "ladder.json"}, "-in and -out are required"},
		{[]string{"compare", "-video", "ladder.json"}, "-video and -audio are required"},
		{[]string{"run", "-url", "http://127.0.0.1:1/x/whep", "-mode", "chrome"}, "want browser"},
		{[]string{"ladder", "-url", "http://127.0.0.1:1/x/whep", "-pid", "1", "-rcvbuf", "-1"}, "-rcvbuf"},
		{[]string{"headline"}, "name one or more ladder.json"},
	}
	for _, c := range cases {
		var stderr strings.Builder
		if code := realMain(c.args, io.Discard, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", c.args, code)
		}
		if !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: stderr %q lacks %q", c.args, stderr.String(), c.want)
		}
	}
}

// TestPlotDataFromJSON is the first half of how docs/bench-ladder.png is
// made: a ladder.json in (here one written by hand, without a summary),
// the plot's data, summary included, out for tools/ladderplot.
func TestPlotDataFromJSON(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "ladder.json"), filepath.Join(dir, ladder.PlotFile)
	js := `{"steps": [{"n": 0, "verified": 0, "cpuMeanPct": 1.4, "cpuPeakPct": 2},
		{"n": 100, "verified": 100, "cpuMeanPct": 11.9, "cpuPeakPct": 15, "drops": 0},
		{"n": 200, "verified": 200, "cpuMeanPct": 21.5, "cpuPeakPct": 28, "drops": 0}]}`
	if err := os.WriteFile(in, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	if code := realMain([]string{"plotdata", "-in", in, "-out", out}, io.Discard, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var d ladder.PlotData
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if len(d.Points) != 3 || d.Points[2].CPUPeak != 28 || d.Fit == nil || d.Fit.Slope <= 0 {
		t.Errorf("plot data %s", b)
	}
	if code := realMain([]string{"plotdata", "-in", filepath.Join(dir, "missing.json"), "-out", out}, io.Discard, &stderr); code != 1 {
		t.Errorf("a missing input gave exit %d, want 1", code)
	}
}

// TestCompareFromJSON is how make bench states audio's cost: two
// ladder.json in, the ratio of their marginal costs out.
func TestCompareFromJSON(t *testing.T) {
	dir := t.TempDir()
	video, audio := filepath.Join(dir, "video.json"), filepath.Join(dir, "audio.json")
	write := func(name string, withAudio bool, slope float64) {
		js := fmt.Sprintf(`{"audio": %v, "steps": [{"n": 0, "cpuMeanPct": 2},
			{"n": 100, "verified": 100, "cpuMeanPct": %g, "generatorCpuPct": 1},
			{"n": 200, "verified": 200, "cpuMeanPct": %g, "generatorCpuPct": 2}]}`, withAudio, 2+100*slope, 2+200*slope)
		if err := os.WriteFile(name, []byte(js), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(video, false, 0.1)
	write(audio, true, 0.11)
	var stdout, stderr strings.Builder
	if code := realMain([]string{"compare", "-video", video, "-audio", audio}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "1.10× (+10 %)") {
		t.Errorf("comparison:\n%s", stdout.String())
	}
	// Swapped files are refused rather than compared upside down.
	stderr.Reset()
	if code := realMain([]string{"compare", "-video", audio, "-audio", video}, io.Discard, &stderr); code != 2 {
		t.Errorf("swapped ladders: exit %d, want 2 (%s)", code, stderr.String())
	}
}

// TestHeadlineFromJSON is how make bench prints its headline: ladders of
// two server binaries and an extra viewer mode in, medians side by side out.
func TestHeadlineFromJSON(t *testing.T) {
	dir := t.TempDir()
	var files []string
	write := func(label, mode string, slope float64) {
		name := filepath.Join(dir, fmt.Sprintf("%s-%s-%d.json", label, mode, len(files)))
		js := fmt.Sprintf(`{"label": %q, "viewerMode": %q, "steps": [{"n": 0, "cpuMeanPct": 2, "rssMiB": 40},
			{"n": 100, "verified": 100, "cpuMeanPct": %g, "rssMiB": 70, "generatorCpuPct": 1},
			{"n": 200, "verified": 200, "cpuMeanPct": %g, "rssMiB": 100, "generatorCpuPct": 2}]}`, label, mode, 2+100*slope, 2+200*slope)
		if err := os.WriteFile(name, []byte(js), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
	}
	write("base", "browser", 0.16)
	write("this", "browser", 0.08)
	write("base", "gro", 0.07)
	write("this", "browser", 0.06)
	write("base", "browser", 0.18)
	var stdout, stderr strings.Builder
	if code := realMain(append([]string{"headline"}, files...), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"| base, browser viewers, video | 2 (2) | 0.170 (0.160, 0.180) |", "| this, browser viewers, video | 2 (2) | 0.070 (0.080, 0.060) |",
		"base, gro viewers, video — **extra, not the headline**", "| 100.0 (100.0, 100.0) | 0.300 (0.300, 0.300) |", "this costs 0.41× what base does"} {
		if !strings.Contains(out, want) {
			t.Errorf("headline lacks %q:\n%s", want, out)
		}
	}
}
