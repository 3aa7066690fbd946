package ladder

import (
	"bytes"
	"image/png"
	"testing"
)

func TestPlotWithoutFit(t *testing.T) {
	steps := []Step{{N: 0, CPUMean: 3, CPUPeak: 4}}
	sum := Summarize(steps)
	if sum.MarginalOK {
		t.Fatal("one step gave a fit")
	}
	var b bytes.Buffer
	if err := Plot(&b, steps, sum); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if hasColour(img, ColorFit) {
		t.Error("a fit line was drawn with no fit")
	}
	if !hasColour(img, ColorCeil) {
		t.Error("the 80% line is missing")
	}
}

func TestPlotNeedsSteps(t *testing.T) {
	if err := Plot(&bytes.Buffer{}, nil, Summary{}); err == nil {
		t.Error("plotting no steps succeeded")
	}
}
