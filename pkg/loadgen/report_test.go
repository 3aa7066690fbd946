package loadgen

import (
	"bytes"
	"encoding/json"
	"image"
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
	rep := &LadderReport{URL: "http://127.0.0.1:1/x/whep", Started: time.Unix(0, 0), Hold: time.Second, Rate: 20, Steps: steps,
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
	var back LadderReport
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
	// The CPU line must be drawn: look for its colour.
	found := false
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y && !found; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if uint8(r>>8) == colCPU.R && uint8(g>>8) == colCPU.G && uint8(bl>>8) == colCPU.B {
				found = true
				break
			}
		}
	}
	if !found {
		t.Error("ladder.png has no pixel of the CPU line's colour")
	}
}

func TestValidReportSaysValid(t *testing.T) {
	steps := ladderSteps(0.01)
	rep := &LadderReport{Steps: steps, Summary: Summarize(steps)}
	var b strings.Builder
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "INVALID") || !strings.Contains(b.String(), "Validity: valid") {
		t.Errorf("valid run rendered as:\n%s", b.String())
	}
}

// TestLineEnds guards the rasterizer: every line must end, on its end point.
func TestLineEnds(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 800, 480))
	pts := [][4]int{{70, 420, 100, 300}, {100, 300, 720, 40}, {0, 0, 799, 1}, {5, 400, 6, 0}, {700, 10, 10, 470}, {50, 50, 50, 50}}
	for _, p := range pts {
		line(img, p[0], p[1], p[2], p[3], colCPU, 1)
		if img.RGBAAt(p[2], p[3]) != colCPU {
			t.Errorf("line %v did not reach its end point", p)
		}
	}
}
