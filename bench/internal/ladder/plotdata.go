package ladder

import (
	"encoding/json"
	"fmt"
	"os"
)

// PlotFile is the file WriteFiles writes beside ladder.json for the plot:
// tools/ladderplot renders it to ladder.png. The renderer lives in the
// tools module so that the server's module carries no plotting library;
// this small format, rather than the whole Report, is the contract
// between the two modules.
const PlotFile = "ladder-plot.json"

// PlotData is what the plot of server CPU against viewers shows.
type PlotData struct {
	Points []PlotPoint `json:"points"`
	// SaturationCPU is the ceiling line, % of one core.
	SaturationCPU float64 `json:"saturationCpuPct"`
	// Fit is the summary's least-squares line; nil when there is none.
	Fit *PlotFit `json:"fit,omitempty"`
	// Cross is where mean CPU crosses SaturationCPU; nil when unknown.
	Cross *PlotCross `json:"cross,omitempty"`
}

// PlotPoint is one step: server CPU mean over the hold and peak
// one-second sample, % of one core.
type PlotPoint struct {
	N       int     `json:"n"`
	CPUMean float64 `json:"cpuMeanPct"`
	CPUPeak float64 `json:"cpuPeakPct"`
}

// PlotFit is CPU = Intercept + Slope·N.
type PlotFit struct {
	Intercept float64 `json:"interceptPct"`
	Slope     float64 `json:"slopePctPerViewer"`
}

// PlotCross is the N at which the ceiling is reached, and whether it lies
// beyond the measured steps.
type PlotCross struct {
	N            float64 `json:"n"`
	Extrapolated bool    `json:"extrapolated"`
}

// PlotData returns what the plot of the report shows.
func (r *Report) PlotData() PlotData {
	d := PlotData{Points: make([]PlotPoint, len(r.Steps)), SaturationCPU: SaturationCPU}
	for i, s := range r.Steps {
		d.Points[i] = PlotPoint{N: s.N, CPUMean: s.CPUMean, CPUPeak: s.CPUPeak}
	}
	if sm := r.Summary; sm.MarginalOK {
		d.Fit = &PlotFit{Intercept: sm.FitIntercept, Slope: sm.MarginalCPU}
	}
	if c := r.Summary.Cross80; c.Known {
		d.Cross = &PlotCross{N: c.N, Extrapolated: c.Extrapolated}
	}
	return d
}

// WritePlotData writes the report's PlotData to name as JSON.
func (r *Report) WritePlotData(name string) error {
	js, err := json.MarshalIndent(r.PlotData(), "", "  ")
	if err != nil {
		return fmt.Errorf("ladder: encode %s: %w", name, err)
	}
	if err := os.WriteFile(name, append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("ladder: write %s: %w", name, err)
	}
	return nil
}
