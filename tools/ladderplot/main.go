// Command ladderplot draws a capacity ladder's plot: server CPU (mean and
// peak, % of one core) against WHEP viewers, with the ceiling line and
// the least-squares fit extended to where it meets it, as a PNG.
//
// Its input is the ladder-plot.json that "whep-loadgen ladder -out DIR"
// writes beside ladder.json (or "whep-loadgen plotdata" makes from a
// ladder.json). It is a module of its own (see go.mod) so that neither the
// server's module nor make test carries the plotting library.
//
//	ladderplot -in DIR/ladder-plot.json -out DIR/ladder.png
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("ladderplot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "", "a ladder-plot.json written by whep-loadgen (required)")
	out := fs.String("out", "", "the PNG to write (required)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *in == "" || *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "ladderplot: -in and -out are required, e.g. -in bench/results/STAMP/video/ladder-plot.json -out docs/bench-ladder.png")
		return 2
	}
	if err := plotFile(*in, *out); err != nil {
		fmt.Fprintf(stderr, "ladderplot: %v\n", err)
		return 1
	}
	return 0
}

// data is ladder-plot.json, the format bench/internal/ladder's PlotData writes
// (its test holds it to testdata/ladder-plot.json, as this one's does).
type data struct {
	Points []struct {
		N       int     `json:"n"`
		CPUMean float64 `json:"cpuMeanPct"`
		CPUPeak float64 `json:"cpuPeakPct"`
	} `json:"points"`
	SaturationCPU float64 `json:"saturationCpuPct"`
	Fit           *struct {
		Intercept float64 `json:"interceptPct"`
		Slope     float64 `json:"slopePctPerViewer"`
	} `json:"fit"`
	Cross *struct {
		N            float64 `json:"n"`
		Extrapolated bool    `json:"extrapolated"`
	} `json:"cross"`
}

func plotFile(in, out string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var d data
	if err := json.Unmarshal(b, &d); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	err = render(f, &d)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Colours of the plot, named for the test that looks for them.
var (
	colorMean = color.RGBA{25, 90, 200, 255}
	colorPeak = color.RGBA{150, 180, 235, 255}
	colorFit  = color.RGBA{230, 120, 20, 255}
	colorCeil = color.RGBA{200, 40, 40, 255}
)

// render draws d as a 9×5 inch PNG at 120 dpi.
func render(w io.Writer, d *data) error {
	if len(d.Points) == 0 {
		return errors.New("nothing to plot (no steps)")
	}
	p := plot.New()
	p.Title.Text = "Server CPU against WHEP viewers"
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.X.Label.Text = "viewers (N)"
	p.Y.Label.Text = "server CPU, % of one core"
	p.Add(plotter.NewGrid())

	mean := make(plotter.XYs, len(d.Points))
	peak := make(plotter.XYs, len(d.Points))
	maxN, maxCPU := 1.0, 0.0
	for i, s := range d.Points {
		mean[i] = plotter.XY{X: float64(s.N), Y: s.CPUMean}
		peak[i] = plotter.XY{X: float64(s.N), Y: s.CPUPeak}
		maxN = math.Max(maxN, float64(s.N))
		maxCPU = math.Max(maxCPU, s.CPUPeak)
	}
	// An extrapolated crossing is shown when it is near enough that the
	// measured steps keep most of the width.
	showCross := d.Cross != nil && d.Cross.N > 0 && d.Cross.N <= 1.5*maxN
	p.X.Min, p.X.Max = 0, maxN
	if showCross {
		p.X.Max = math.Max(maxN, d.Cross.N)
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
		return fmt.Errorf("plot: %w", err)
	}
	style(peakLine, peakDots, colorPeak)
	meanLine, meanDots, err := plotter.NewLinePoints(mean)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	style(meanLine, meanDots, colorMean)
	p.Add(peakLine, peakDots, meanLine, meanDots)
	p.Legend.Add("mean over the hold", meanLine, meanDots)
	p.Legend.Add("peak one-second sample", peakLine, peakDots)

	if f := d.Fit; f != nil {
		fit := plotter.NewFunction(func(n float64) float64 { return f.Intercept + f.Slope*n })
		fit.Color, fit.Width, fit.Dashes = colorFit, vg.Points(1.5), []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(fit)
		p.Legend.Add(fmt.Sprintf("least-squares fit: %.3f %% per viewer", f.Slope), fit)
	}
	ceil := plotter.NewFunction(func(float64) float64 { return d.SaturationCPU })
	ceil.Color, ceil.Width, ceil.Dashes = colorCeil, vg.Points(1), []vg.Length{vg.Points(2), vg.Points(3)}
	p.Add(ceil)
	label := fmt.Sprintf("%.0f %% of one core", d.SaturationCPU)
	if showCross {
		how := "interpolated"
		if d.Cross.Extrapolated {
			how = "extrapolated"
		}
		label += fmt.Sprintf(": N ≈ %.0f (%s)", d.Cross.N, how)
	}
	p.Legend.Add(label, ceil)
	// The curve rises to the right, so the bottom right corner is empty.
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(8), vg.Points(8)

	c := vgimg.NewWith(vgimg.UseWH(9*vg.Inch, 5*vg.Inch), vgimg.UseDPI(120))
	p.Draw(draw.New(c))
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(w); err != nil {
		return fmt.Errorf("write plot: %w", err)
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
