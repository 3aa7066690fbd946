package ladder

import (
	"fmt"
	"io"
	"strings"
)

// AudioGoal is how much more a viewer with audio may cost the server than
// one with video only (issue 11). Opus adds ~4 % of the bytes but 50
// packets a second to the video's ~250, and the server's cost per viewer
// is mostly per packet (SRTP, system calls), so this is a real bound.
const AudioGoal = 0.15

// AudioComparison sets the marginal cost per viewer of a video-only ladder
// against one whose viewers also receive audio, from the same server.
type AudioComparison struct {
	Video, Audio *Report
	Ratio        float64 // audio marginal / video marginal; 0 when either is unknown
	Known        bool
}

// CompareAudio compares two ladders' marginal server CPU per viewer.
func CompareAudio(video, audio *Report) AudioComparison {
	c := AudioComparison{Video: video, Audio: audio}
	v, a := video.Summary, audio.Summary
	if v.MarginalOK && a.MarginalOK && v.MarginalCPU > 0 && a.MarginalCPU > 0 {
		c.Ratio, c.Known = a.MarginalCPU/v.MarginalCPU, true
	}
	return c
}

// Met reports whether audio stayed within AudioGoal of video only.
func (c AudioComparison) Met() bool { return c.Known && c.Ratio <= 1+AudioGoal }

// WriteMarkdown writes both ladders' headline figures and the ratio.
func (c AudioComparison) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("## Audio's cost per viewer\n\n")
	b.WriteString("| viewers | marginal server CPU per viewer % | 80 % of the core at N | top step verified | generator per viewer % | valid |\n")
	b.WriteString("|---|---:|---:|---:|---:|---|\n")
	for _, row := range []struct {
		name string
		r    *Report
	}{{"video only", c.Video}, {"video + audio", c.Audio}} {
		s := row.r.Summary
		marg := "n/a"
		if s.MarginalOK {
			marg = fmt.Sprintf("%.4f", s.MarginalCPU)
		}
		cross := "n/a"
		if s.Cross80.Known {
			cross = fmt.Sprintf("%.0f", s.Cross80.N)
			if s.Cross80.Extrapolated {
				cross += " (extrapolated)"
			}
		}
		top := "n/a"
		if n := len(row.r.Steps); n > 0 {
			st := row.r.Steps[n-1]
			top = fmt.Sprintf("%d/%d", st.Verified, st.N)
		}
		valid := "yes"
		if s.Invalid {
			valid = "**INVALID**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.4f | %s |\n", row.name, marg, cross, top, s.GenPerViewer, valid)
	}
	b.WriteString("\n")
	switch {
	case !c.Known:
		b.WriteString("- With audio / video only: n/a (a marginal cost could not be measured)\n")
	default:
		verdict := "met"
		if !c.Met() {
			verdict = "**not met**"
		}
		fmt.Fprintf(&b, "- With audio / video only: %.2f× (%+.0f %%); goal ≤ +%.0f %%: %s\n",
			c.Ratio, 100*(c.Ratio-1), 100*AudioGoal, verdict)
	}
	if c.Video.Summary.Invalid || c.Audio.Summary.Invalid {
		b.WriteString("- A ladder is INVALID, so the ratio is not a measurement of the server alone\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
