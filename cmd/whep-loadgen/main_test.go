package main

import (
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
		{[]string{"plot", "-in", "ladder.json"}, "-in and -out are required"},
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

// TestPlotFromJSON is the path docs/bench-ladder.png is made by: a
// ladder.json in, a PNG out.
func TestPlotFromJSON(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "ladder.json"), filepath.Join(dir, "ladder.png")
	js := `{"steps": [{"n": 0, "verified": 0, "cpuMeanPct": 1.4, "cpuPeakPct": 2},
		{"n": 100, "verified": 100, "cpuMeanPct": 11.9, "cpuPeakPct": 15, "drops": 0},
		{"n": 200, "verified": 200, "cpuMeanPct": 21.5, "cpuPeakPct": 28, "drops": 0}]}`
	if err := os.WriteFile(in, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	if code := realMain([]string{"plot", "-in", in, "-out", out}, io.Discard, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Fatalf("%s is not a PNG: %v", out, err)
	}
	if code := realMain([]string{"plot", "-in", filepath.Join(dir, "missing.json"), "-out", out}, io.Discard, &stderr); code != 1 {
		t.Errorf("a missing input gave exit %d, want 1", code)
	}
}
