package main

import (
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderSample draws testdata/ladder-plot.json, the sample
// bench/internal/ladder's test holds its output to, and checks the PNG.
func TestRenderSample(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ladder.png")
	var stderr strings.Builder
	if code := run([]string{"-in", "testdata/ladder-plot.json", "-out", out}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	img := decodePNG(t, out)
	// 9×5 inches at 120 dpi.
	if b := img.Bounds(); b.Dx() != 1080 || b.Dy() != 600 {
		t.Errorf("ladder.png is %v, want 1080x600", b)
	}
	for name, c := range map[string]color.RGBA{"mean": colorMean, "peak": colorPeak, "fit": colorFit, "ceiling": colorCeil} {
		if !hasColour(img, c) {
			t.Errorf("ladder.png has no pixel of the %s colour", name)
		}
	}
}

func TestRenderWithoutFit(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "ladder-plot.json"), filepath.Join(dir, "ladder.png")
	js := `{"points": [{"n": 0, "cpuMeanPct": 3, "cpuPeakPct": 4}], "saturationCpuPct": 80}`
	if err := os.WriteFile(in, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"-in", in, "-out", out}, io.Discard); code != 0 {
		t.Fatalf("exit %d", code)
	}
	img := decodePNG(t, out)
	if hasColour(img, colorFit) {
		t.Error("a fit line was drawn with no fit")
	}
	if !hasColour(img, colorCeil) {
		t.Error("the ceiling line is missing")
	}
}

func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte(`{"points": [], "saturationCpuPct": 80}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.png")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-in", empty}, 2, "-in and -out are required"},
		{[]string{"-in", empty, "-out", out}, 1, "no steps"},
		{[]string{"-in", filepath.Join(dir, "missing.json"), "-out", out}, 1, "missing.json"},
	} {
		var stderr strings.Builder
		if code := run(c.args, &stderr); code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr.String(), c.code, c.want)
		}
	}
}

func decodePNG(t *testing.T, name string) image.Image {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s is not a PNG: %v", name, err)
	}
	return img
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
