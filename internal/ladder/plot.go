package ladder

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Colours of the plot, exported for tests that look for them.
var (
	ColorMean = color.RGBA{25, 90, 200, 255}
	ColorPeak = color.RGBA{150, 180, 235, 255}
	ColorFit  = color.RGBA{230, 120, 20, 255}
	ColorCeil = color.RGBA{200, 40, 40, 255}
)

// Plot draws server CPU (mean and peak, % of one core) against viewers as
// a PNG, with the SaturationCPU line and the summary's least-squares fit
// extended to where it meets that line.
func Plot(w io.Writer, steps []Step, sum Summary) error {
	if len(steps) == 0 {
		return errors.New("ladder: nothing to plot (no steps)")
	}
	p := plot.New()
	p.Title.Text = "Server CPU against WHEP viewers"
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.X.Label.Text = "viewers (N)"
	p.Y.Label.Text = "server CPU, % of one core"
	p.Add(plotter.NewGrid())

	mean := make(plotter.XYs, len(steps))
	peak := make(plotter.XYs, len(steps))
	maxN, maxCPU := 1.0, 0.0
	for i, s := range steps {
		mean[i] = plotter.XY{X: float64(s.N), Y: s.CPUMean}
		peak[i] = plotter.XY{X: float64(s.N), Y: s.CPUPeak}
		maxN = math.Max(maxN, float64(s.N))
		maxCPU = math.Max(maxCPU, s.CPUPeak)
	}
	// An extrapolated crossing is shown when it is near enough that the
	// measured steps keep most of the width.
	cross := sum.Cross80
	showCross := cross.Known && cross.N > 0 && cross.N <= 1.5*maxN
	p.X.Min, p.X.Max = 0, maxN
	if showCross {
		p.X.Max = math.Max(maxN, cross.N)
	}
	p.Y.Min, p.Y.Max = 0, math.Max(100, math.Ceil(maxCPU/10)*10)
	// gonum's default ticker labels about three values per axis; a reader
	// of a capacity plot wants to read N and CPU off it.
	p.X.Tick.Marker = ticks(p.X.Max, 8)
	p.Y.Tick.Marker = ticks(p.Y.Max, 10)
	for _, ts := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle,
		&p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		ts.Font.Variant = "Sans"
	}

	peakLine, peakDots, err := plotter.NewLinePoints(peak)
	if err != nil {
		return fmt.Errorf("ladder: plot: %w", err)
	}
	style(peakLine, peakDots, ColorPeak)
	meanLine, meanDots, err := plotter.NewLinePoints(mean)
	if err != nil {
		return fmt.Errorf("ladder: plot: %w", err)
	}
	style(meanLine, meanDots, ColorMean)
	p.Add(peakLine, peakDots, meanLine, meanDots)
	p.Legend.Add("mean over the hold", meanLine, meanDots)
	p.Legend.Add("peak one-second sample", peakLine, peakDots)

	if sum.MarginalOK {
		fit := plotter.NewFunction(func(n float64) float64 { return sum.FitIntercept + sum.MarginalCPU*n })
		fit.Color, fit.Width, fit.Dashes = ColorFit, vg.Points(1.5), []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(fit)
		p.Legend.Add(fmt.Sprintf("least-squares fit: %.3f %% per viewer", sum.MarginalCPU), fit)
	}
	ceil := plotter.NewFunction(func(float64) float64 { return SaturationCPU })
	ceil.Color, ceil.Width, ceil.Dashes = ColorCeil, vg.Points(1), []vg.Length{vg.Points(2), vg.Points(3)}
	p.Add(ceil)
	label := fmt.Sprintf("%.0f %% of one core", SaturationCPU)
	if showCross {
		how := "interpolated"
		if cross.Extrapolated {
			how = "extrapolated"
		}
		label += fmt.Sprintf(": N ≈ %.0f (%s)", cross.N, how)
	}
	p.Legend.Add(label, ceil)
	// The curve rises to the right, so the bottom right corner is empty.
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(8), vg.Points(8)

	c := vgimg.NewWith(vgimg.UseWH(9*vg.Inch, 5*vg.Inch), vgimg.UseDPI(120))
	p.Draw(draw.New(c))
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(w); err != nil {
		return fmt.Errorf("ladder: write plot: %w", err)
	}
	return nil
}

func style(l *plotter.Line, dots *plotter.Scatter, c color.Color) {
	l.Color, l.Width = c, vg.Points(2)
	dots.Color, dots.Shape, dots.Radius = c, draw.CircleGlyph{}, vg.Points(3)
}

// ticks labels 0..hi at a 1, 2 or 5 × 10^k step giving at most n
// intervals, with an unlabelled tick halfway between.
func ticks(hi float64, n int) plot.ConstantTicks {
	step := 1.0
	for i := 0; hi/step > float64(n); i++ {
		step *= []float64{2, 2.5, 2}[i%3] // 1, 2, 5, 10, 20, 50, …
	}
	var out plot.ConstantTicks
	for v := 0.0; v <= hi+step/1e6; v += step / 2 {
		t := plot.Tick{Value: v}
		if math.Mod(v, step) < step/1e6 {
			t.Label = strconv.FormatFloat(v, 'f', -1, 64)
		}
		out = append(out, t)
	}
	return out
}
