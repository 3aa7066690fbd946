package ladder

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
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
	f, err := os.Open(filepath.Join(dir, "ladder.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("ladder.png: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 400 {
		t.Errorf("ladder.png is %v, want at least 800x400", b)
	}
	for name, c := range map[string]color.RGBA{"mean": ColorMean, "fit": ColorFit, "80% line": ColorCeil} {
		if !hasColour(img, c) {
			t.Errorf("ladder.png has no pixel of the %s colour", name)
		}
	}
}

func hasColour(img image.Image, c color.RGBA) bool {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if color.RGBAModel.Convert(img.At(x, y)).(color.RGBA) == c {
				return true
			}
		}
	}
	return false
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
