package loadgen

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
)

var (
	colBG   = color.RGBA{255, 255, 255, 255}
	colAxis = color.RGBA{40, 40, 40, 255}
	colGrid = color.RGBA{225, 225, 225, 255}
	colCPU  = color.RGBA{25, 90, 200, 255}
	colPeak = color.RGBA{150, 180, 235, 255}
	colDrop = color.RGBA{210, 40, 40, 255}
	colSat  = color.RGBA{120, 120, 120, 255}
)

// PlotLadder draws server CPU (mean and peak, left axis, % of one core) and
// dropped frames (right axis) against N as a PNG.
func PlotLadder(w io.Writer, steps []Step) error {
	const W, H = 800, 480
	const left, right, top, bottom = 70, 80, 40, 60
	img := image.NewRGBA(image.Rect(0, 0, W, H))
	fill(img, img.Bounds(), colBG)

	maxN, maxCPU, maxDrops := 1.0, 100.0, 1.0
	for _, s := range steps {
		maxN = math.Max(maxN, float64(s.N))
		maxCPU = math.Max(maxCPU, s.CPUPeak)
		if s.Drops != nil {
			maxDrops = math.Max(maxDrops, *s.Drops)
		}
	}
	maxCPU = math.Ceil(maxCPU/20) * 20
	pw, ph := float64(W-left-right), float64(H-top-bottom)
	px := func(n float64) int { return left + int(n/maxN*pw) }
	pyCPU := func(c float64) int { return H - bottom - int(c/maxCPU*ph) }
	pyDrop := func(d float64) int { return H - bottom - int(d/maxDrops*ph) }

	for c := 0.0; c <= maxCPU; c += 20 {
		y := pyCPU(c)
		line(img, left, y, W-right, y, colGrid, 1)
		lbl := fmt.Sprintf("%.0f", c)
		drawText(img, left-8-textWidth(lbl, 1), y-3, lbl, 1, colAxis)
	}
	dashed(img, left, pyCPU(SaturationCPU), W-right, colSat)
	drawText(img, W-right-textWidth("80%", 1)-2, pyCPU(SaturationCPU)-10, "80%", 1, colSat)
	for i := 0; i <= 4; i++ {
		d := maxDrops * float64(i) / 4
		lbl := fmt.Sprintf("%.4g", d)
		drawText(img, W-right+8, pyDrop(d)-3, lbl, 1, colDrop)
	}
	for _, s := range steps {
		x := px(float64(s.N))
		line(img, x, H-bottom, x, H-bottom+5, colAxis, 1)
		lbl := fmt.Sprintf("%d", s.N)
		drawText(img, x-textWidth(lbl, 1)/2, H-bottom+9, lbl, 1, colAxis)
	}
	line(img, left, top, left, H-bottom, colAxis, 2)
	line(img, left, H-bottom, W-right, H-bottom, colAxis, 2)
	line(img, W-right, top, W-right, H-bottom, colAxis, 1)

	drawText(img, left, 12, "SERVER CPU %", 2, colCPU)
	drawText(img, left+textWidth("SERVER CPU % ", 2), 12, "PEAK", 2, colPeak)
	drawText(img, W-right-textWidth("DROPS", 2), 12, "DROPS", 2, colDrop)
	drawText(img, left+int(pw)/2-textWidth("N", 2)/2, H-bottom+28, "N", 2, colAxis)

	series := func(y func(Step) (float64, bool), py func(float64) int, c color.RGBA) {
		havePrev := false
		var x0, y0 int
		for _, s := range steps {
			v, ok := y(s)
			if !ok {
				havePrev = false
				continue
			}
			x1, y1 := px(float64(s.N)), py(v)
			if havePrev {
				line(img, x0, y0, x1, y1, c, 2)
			}
			fill(img, image.Rect(x1-3, y1-3, x1+4, y1+4), c)
			x0, y0, havePrev = x1, y1, true
		}
	}
	series(func(s Step) (float64, bool) { return s.CPUPeak, true }, pyCPU, colPeak)
	series(func(s Step) (float64, bool) { return s.CPUMean, true }, pyCPU, colCPU)
	series(func(s Step) (float64, bool) {
		if s.Drops == nil {
			return 0, false
		}
		return *s.Drops, true
	}, pyDrop, colDrop)

	if err := png.Encode(w, img); err != nil {
		return fmt.Errorf("loadgen: encode plot: %w", err)
	}
	return nil
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

// line draws a straight line of the given thickness (Bresenham).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA, thick int) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		fill(img, image.Rect(x0, y0, x0+thick, y0+thick), c)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func dashed(img *image.RGBA, x0, y, x1 int, c color.RGBA) {
	for x := x0; x < x1; x += 10 {
		line(img, x, y, min(x+5, x1), y, c, 1)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}
