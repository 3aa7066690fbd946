package ladder

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func optFloat(v *float64, format string) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf(format, *v)
}

// WriteMarkdown writes the ladder table and its conclusions.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	title := "whep-loadgen ladder"
	if r.Label != "" {
		title += " — " + r.Label
	}
	if r.Mode != "" {
		title += ", " + r.Mode + " viewers"
	}
	fmt.Fprintf(&b, "## %s — %s\n\n", title, r.Started.Format("2006-01-02 15:04:05 MST"))
	if r.GRO {
		b.WriteString("**Not a headline figure**: the viewers receive with UDP_GRO and send no RTCP, which no browser does; on loopback the kernel then spares the server segmenting its GSO sends.\n\n")
	}
	if r.Summary.Invalid {
		fmt.Fprintf(&b, "**INVALID RUN**: %s.\n\n", r.Summary.InvalidReason)
	}
	fmt.Fprintf(&b, "URL %s, hold %s per step, ramp %.0f sessions/s. Viewers: %s.\n\n", r.URL, r.Hold, r.Rate, r.viewers())
	head, rule := "", ""
	if r.Audio {
		head, rule = " audio kbit/s per viewer | audio loss % |", "---:|---:|"
	}
	b.WriteString("| N | connected | verified | server CPU mean % | CPU peak % | RSS MiB | video kbit/s per viewer | video loss % |" + head +
		" drops | SRT RTT ms | generator CPU % | stalls | RTCP reports/s per viewer | verdict |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|" + rule + "---:|---:|---:|---:|---:|---|\n")
	for _, s := range r.Steps {
		audio := ""
		if r.Audio {
			audio = fmt.Sprintf(" %.0f | %.3f |", s.AudioKbpsPerViewer, 100*s.AudioLoss)
		}
		rr := "-"
		if r.ReceiverReports && s.N > 0 {
			rr = fmt.Sprintf("%.2f", s.ReportsPerViewerSecond)
		}
		fmt.Fprintf(&b, "| %d | %d | %d | %.1f | %.1f | %.1f | %.0f | %.3f |%s %s | %s | %.1f | %d | %s | %s |\n",
			s.N, s.Connected, s.Verified, s.CPUMean, s.CPUPeak, s.RSSMiB, s.KbpsPerViewer, 100*s.Loss, audio,
			optFloat(s.Drops, "%.0f"), optFloat(s.SRTRTTms, "%.1f"), s.GenCPU, s.Stalls, rr, s.Verdict)
	}
	sm := r.Summary
	b.WriteString("\n")
	fmt.Fprintf(&b, "- Server CPU crosses %.0f%% of one core at N = %s\n", SaturationCPU, sm.Cross80)
	if sm.MarginalOK {
		fmt.Fprintf(&b, "- Marginal server CPU per viewer: %.3f%% of one core (least squares over N = %v)\n", sm.MarginalCPU, sm.StepsUsedInSlope)
	} else {
		b.WriteString("- Marginal server CPU per viewer: n/a (fewer than two usable steps)\n")
	}
	if sm.RSSAtRefMiB != nil {
		fmt.Fprintf(&b, "- RSS at N = %d: %.1f MiB (%.0f MB)", RSSRefN, *sm.RSSAtRefMiB, *sm.RSSAtRefMiB*(1<<20)/1e6)
	} else {
		fmt.Fprintf(&b, "- RSS at N = %d: n/a (no step reached it)", RSSRefN)
	}
	if sm.RSSFitOK {
		fmt.Fprintf(&b, "; per viewer %.3f MiB (least squares of RSS over the same steps: %.1f + %.3f·N)\n",
			sm.RSSPerViewerMiB, sm.RSSInterceptMiB, sm.RSSPerViewerMiB)
	} else {
		b.WriteString("; per viewer n/a\n")
	}
	fmt.Fprintf(&b, "- Stalls (video pauses > 200 ms at a viewer, over every hold): %d\n", sm.Stalls)
	if r.ReceiverReports {
		var nacked, plis, unsent uint64
		var congested float64
		known := false
		for _, s := range r.Steps {
			nacked += s.NACKed
			plis += s.PLIs
			unsent += s.RTCPUnsent
			if s.CongestedDrops != nil {
				congested += *s.CongestedDrops
				known = true
			}
		}
		cong := "n/a"
		if known {
			cong = fmt.Sprintf("%.0f", congested)
		}
		fmt.Fprintf(&b, "- Viewer feedback over the holds: %d packets NACKed, %d PLIs, %d RTCP packets not sent; frames the server dropped for congestion: %s\n",
			nacked, plis, unsent, cong)
	}
	var rcvDrops, sndRefused float64
	socketKnown := false
	for _, s := range r.Steps {
		if s.SocketReceiveDrops != nil && s.SocketSendRefused != nil {
			rcvDrops += *s.SocketReceiveDrops
			sndRefused += *s.SocketSendRefused
			socketKnown = true
		}
	}
	if socketKnown {
		fmt.Fprintf(&b, "- The server's media socket over the holds: %.0f datagrams dropped on receive (full buffer), %.0f sends refused\n",
			rcvDrops, sndRefused)
	}
	fmt.Fprintf(&b, "- Generator CPU per viewer: %.3f%% of one core", sm.GenPerViewer)
	if sm.MarginalOK && sm.MarginalCPU > 0 {
		fmt.Fprintf(&b, " (%.0f%% of the server's marginal cost; the limit is 33%%)", 100*sm.GenPerViewer/sm.MarginalCPU)
	}
	b.WriteString("\n")
	if sm.Invalid {
		b.WriteString("- Validity: **INVALID**\n")
	} else {
		b.WriteString("- Validity: valid (the generator costs less than a third of the server per viewer)\n")
	}
	if r.StoppedEarly != "" {
		fmt.Fprintf(&b, "- Stopped early: %s\n", r.StoppedEarly)
	}
	for _, s := range r.Steps {
		for _, why := range s.Why {
			fmt.Fprintf(&b, "- N=%d not verified: %s\n", s.N, why)
		}
	}
	if len(r.Failures) > 0 {
		for _, k := range slices.Sorted(maps.Keys(r.Failures)) {
			fmt.Fprintf(&b, "- Failed to connect (%d×): %s\n", r.Failures[k], k)
		}
	}
	if r.Retries > 0 {
		fmt.Fprintf(&b, "- Offers repeated after 503 with Retry-After (the server's handshake limit): %d\n", r.Retries)
	}
	if r.Lost > 0 {
		fmt.Fprintf(&b, "- Sessions that ended by themselves: %d\n", r.Lost)
	}
	switch {
	case r.ProfileTop != "":
		fmt.Fprintf(&b, "\nServer CPU profile at N = %d (`go tool pprof -top`, first %d functions):\n\n```\n%s\n```\n",
			r.ProfileN, profileTopNodes, r.ProfileTop)
	case r.ProfileErr != "":
		fmt.Fprintf(&b, "- Server CPU profile at N = %d: n/a (%s)\n", r.ProfileN, r.ProfileErr)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// viewers describes how the sessions received, since the server's cost
// per viewer depends on it.
func (r *Report) viewers() string {
	var parts []string
	if r.Mode != "" {
		parts = append(parts, r.Mode+" mode")
	}
	if r.Audio {
		parts = append(parts, "video and Opus audio")
	} else {
		parts = append(parts, "video only")
	}
	if r.NACK {
		parts = append(parts, "NACK and PLI offered")
	} else {
		parts = append(parts, "PLI offered, no NACK")
	}
	if r.ReceiverReports {
		parts = append(parts, "an RTCP receiver report a second and NACKs sent")
	} else {
		parts = append(parts, "no RTCP sent (not browser-like)")
	}
	if r.GRO {
		parts = append(parts, "UDP GRO receive (not browser-like)")
	} else {
		parts = append(parts, "plain UDP receive")
	}
	return strings.Join(parts, ", ")
}

// WriteFiles writes dir/ladder.md, dir/ladder.json and dir/ladder-plot.json
// (PlotFile), which tools/ladderplot draws as ladder.png.
func (r *Report) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("ladder: create output directory: %w", err)
	}
	var md strings.Builder
	if err := r.WriteMarkdown(&md); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ladder.md"), []byte(md.String()), 0o644); err != nil {
		return fmt.Errorf("ladder: write ladder.md: %w", err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("ladder: encode ladder.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ladder.json"), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("ladder: write ladder.json: %w", err)
	}
	return r.WritePlotData(filepath.Join(dir, PlotFile))
}

// ReadReport reads a ladder.json. Its summary is computed again from the
// steps, which are the measurement; a file written by hand (figures copied
// from a table) then carries none of its own.
func ReadReport(name string) (*Report, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("ladder: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("ladder: %s: %w", name, err)
	}
	if len(r.Steps) == 0 {
		return nil, fmt.Errorf("ladder: %s has no steps", name)
	}
	for i := range r.Steps {
		r.Steps[i].Judge()
	}
	r.Summary = Summarize(r.Steps)
	return &r, nil
}
