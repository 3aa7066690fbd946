package ladder

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Setup is what a ladder's figures depend on besides the server's code:
// the server setup it was labelled with, how the viewers received, and
// whether they took audio.
type Setup struct {
	Label string
	Mode  string
	Audio bool
}

func (s Setup) String() string {
	label := cmp.Or(s.Label, "server")
	kind := "video"
	if s.Audio {
		kind = "video + audio"
	}
	return fmt.Sprintf("%s, %s viewers, %s", label, cmp.Or(s.Mode, "unnamed"), kind)
}

// Headline is one setup's figures over repeated ladders: a shared machine
// is noisy, so each figure is the median of the runs, with the runs shown.
type Headline struct {
	Setup
	Runs, Valid  int
	Marginal     []float64 // % of one core per viewer, one per run with a fit
	Cross80      []float64 // N at 80 % of the core
	RSSAtRef     []float64 // MiB at RSSRefN
	RSSPerViewer []float64 // MiB
	Stalls       []float64
	GenPerViewer []float64
}

// Headlines groups ladders by setup, in the order setups first appear,
// browser viewers first: they are the headline, the other modes extras.
func Headlines(reps []*Report) []Headline {
	var out []Headline
	for _, r := range reps {
		key := Setup{Label: r.Label, Mode: r.Mode, Audio: r.Audio}
		i := slices.IndexFunc(out, func(h Headline) bool { return h.Setup == key })
		if i < 0 {
			out = append(out, Headline{Setup: key})
			i = len(out) - 1
		}
		h := &out[i]
		sm := r.Summary
		h.Runs++
		if !sm.Invalid {
			h.Valid++
		}
		if sm.MarginalOK {
			h.Marginal = append(h.Marginal, sm.MarginalCPU)
		}
		if sm.Cross80.Known {
			h.Cross80 = append(h.Cross80, sm.Cross80.N)
		}
		if sm.RSSAtRefMiB != nil {
			h.RSSAtRef = append(h.RSSAtRef, *sm.RSSAtRefMiB)
		}
		if sm.RSSFitOK {
			h.RSSPerViewer = append(h.RSSPerViewer, sm.RSSPerViewerMiB)
		}
		h.Stalls = append(h.Stalls, float64(sm.Stalls))
		h.GenPerViewer = append(h.GenPerViewer, sm.GenPerViewer)
	}
	// Labels keep the order they came in; video only before video + audio.
	slices.SortStableFunc(out, func(a, b Headline) int {
		return cmp.Or(cmp.Compare(modeRank(a.Mode), modeRank(b.Mode)), cmp.Compare(audioRank(a.Audio), audioRank(b.Audio)))
	})
	return out
}

func audioRank(audio bool) int {
	if audio {
		return 1
	}
	return 0
}

func modeRank(m string) int {
	switch m {
	case "browser":
		return 0
	case "none":
		return 1
	}
	return 2
}

// Median is the middle value of v (the mean of the two middle ones for an
// even count); ok is false for no values.
func Median(v []float64) (m float64, ok bool) {
	if len(v) == 0 {
		return 0, false
	}
	s := slices.Sorted(slices.Values(v))
	if n := len(s); n%2 == 1 {
		return s[n/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

// cell is a median with the runs it comes from.
func cell(v []float64, format string) string {
	m, ok := Median(v)
	if !ok {
		return "n/a"
	}
	if len(v) == 1 {
		return fmt.Sprintf(format, m)
	}
	runs := make([]string, len(v))
	for i, x := range v {
		runs[i] = fmt.Sprintf(format, x)
	}
	return fmt.Sprintf(format+" (%s)", m, strings.Join(runs, ", "))
}

// WriteHeadlines writes the setups side by side: browser viewers as the
// headline, other modes as labelled extras, and how the labelled server
// setups compare on the headline's marginal cost.
func WriteHeadlines(w io.Writer, hs []Headline) error {
	var b strings.Builder
	b.WriteString("## Headline: marginal server cost per browser-like viewer\n\n")
	b.WriteString("Medians over the runs (each run's value in brackets); the machine is shared and noisy.\n\n")
	b.WriteString("| setup | runs (valid) | marginal CPU per viewer, % of a core | 80 % of the core at N | RSS at N = 200, MiB | RSS per viewer, MiB | stalls | generator per viewer, % |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, h := range hs {
		name := h.Setup.String()
		if h.Mode != "browser" {
			name += " — **extra, not the headline**"
		}
		fmt.Fprintf(&b, "| %s | %d (%d) | %s | %s | %s | %s | %s | %s |\n", name, h.Runs, h.Valid,
			cell(h.Marginal, "%.3f"), cell(h.Cross80, "%.0f"), cell(h.RSSAtRef, "%.1f"), cell(h.RSSPerViewer, "%.3f"),
			cell(h.Stalls, "%.0f"), cell(h.GenPerViewer, "%.3f"))
	}
	// Compare labelled setups with the same viewers: first label against
	// each later one.
	var notes []string
	for i, a := range hs {
		for _, c := range hs[i+1:] {
			if a.Mode != c.Mode || a.Audio != c.Audio || a.Label == c.Label {
				continue
			}
			ma, okA := Median(a.Marginal)
			mc, okC := Median(c.Marginal)
			if okA && okC && ma > 0 && mc > 0 {
				notes = append(notes, fmt.Sprintf("- %s: %s costs %.2f× what %s does per viewer (ratio of the median marginal CPU)",
					Setup{Mode: a.Mode, Audio: a.Audio, Label: "setups"}, cmp.Or(c.Label, "server"), mc/ma, cmp.Or(a.Label, "server")))
			}
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n" + strings.Join(notes, "\n") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
