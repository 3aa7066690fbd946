package loadgen

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// RunConfig configures a single load run: N sessions held for a while.
type RunConfig struct {
	Pool     Config
	Criteria Criteria
	N        int
	Rate     float64       // new sessions per second; 0 means 20
	Hold     time.Duration // measured window; 0 means 30 s
	// Settle is waited after every session receives media and before
	// measuring, so the catch-up burst of the server's GOP cache does not
	// inflate the frame rate; 0 means 2 s.
	Settle time.Duration
}

// SessionResult is one session's line of the run summary.
type SessionResult struct {
	ID            int
	Decode        bool
	Window        Window
	FirstPacket   time.Duration
	FirstIDR      time.Duration // decode sessions only
	Width, Height int
	Keyframes     uint64
}

// RunReport is the outcome of Run.
type RunReport struct {
	URL                        string
	N, Connected, Verified     int
	Failed                     int
	Hold                       time.Duration
	Sessions                   []SessionResult
	Packets, Gaps              uint64  // video
	Bytes                      uint64  // video
	KbpsPerViewer              float64 // video
	Audio                      bool    // audio was offered and judged
	AudioPackets, AudioGaps    uint64
	AudioBytes                 uint64
	AudioKbpsPerViewer         float64
	FirstPacketP50, FirstPkP95 time.Duration
	FirstIDRP50, FirstIDRP95   time.Duration // over decode sessions
	GenCPUHold                 float64       // % of one core while holding
	GenCPUAll                  float64       // % of one core over the whole run, ramp included
	Failures                   map[string]int
	Retries                    int // offers repeated after a 503 or 429 with Retry-After

	Mode   ViewerMode
	Stalls uint64 // video pauses > 200 ms over all sessions
	// Feedback of the viewers over the hold (browser mode).
	ReportsPerViewerSecond   float64
	NACKed, PLIs, RTCPUnsent uint64
	FeedbackSessions         int
}

// Run opens cfg.N sessions, holds them for cfg.Hold and evaluates every one.
func Run(ctx context.Context, cfg RunConfig) (*RunReport, error) {
	if cfg.N <= 0 {
		return nil, fmt.Errorf("loadgen: need at least one session (-n)")
	}
	if cfg.Hold <= 0 {
		cfg.Hold = 30 * time.Second
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 2 * time.Second
	}
	cpu0, err := SelfCPU()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	pool, err := NewPool(cfg.Pool)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	failed, _ := pool.Fill(ctx, cfg.N, cfg.Rate, cfg.Settle)
	h := pool.StartHold()
	waitCtx(ctx, cfg.Hold)
	h.Finish()

	rep := &RunReport{URL: cfg.Pool.URL, N: cfg.N, Failed: failed, Hold: h.Duration(), GenCPUHold: h.GenCPU,
		Audio: cfg.Criteria.Audio, Mode: cfg.Pool.Mode}
	fb := SumFeedback(h, cfg.Criteria)
	rep.Stalls, rep.ReportsPerViewerSecond = fb.Stalls, fb.ReportsPerViewerSecond
	rep.NACKed, rep.PLIs, rep.RTCPUnsent, rep.FeedbackSessions = fb.NACKed, fb.PLIs, fb.RTCPUnsent, fb.Sessions
	var kbps, akbps float64
	var ttfp, ttidr []time.Duration
	for i, w := range h.Windows(cfg.Criteria) {
		s, a := h.Sessions[i], h.After[i]
		if a.Alive {
			rep.Connected++
		}
		if w.Verified {
			rep.Verified++
		}
		rep.Sessions = append(rep.Sessions, SessionResult{
			ID: s.ID, Decode: s.Decode, Window: w, FirstPacket: a.FirstPacket, FirstIDR: a.FirstIDR,
			Width: a.Width, Height: a.Height, Keyframes: a.Keyframes,
		})
		kbps += w.Kbps
		akbps += w.AudioKbps
		rep.Packets += w.Packets
		rep.Gaps += w.Gaps
		rep.Bytes += h.After[i].Bytes - h.Before[i].Bytes
		rep.AudioPackets += w.AudioPackets
		rep.AudioGaps += w.AudioGaps
		rep.AudioBytes += w.AudioBytes
		if a.FirstPacket > 0 {
			ttfp = append(ttfp, a.FirstPacket)
		}
		if a.FirstIDR > 0 {
			ttidr = append(ttidr, a.FirstIDR)
		}
	}
	if len(h.Sessions) > 0 {
		rep.KbpsPerViewer = kbps / float64(len(h.Sessions))
		rep.AudioKbpsPerViewer = akbps / float64(len(h.Sessions))
	}
	rep.FirstPacketP50, rep.FirstPkP95 = Quantile(ttfp, 0.5), Quantile(ttfp, 0.95)
	rep.FirstIDRP50, rep.FirstIDRP95 = Quantile(ttidr, 0.5), Quantile(ttidr, 0.95)
	rep.Failures, _ = pool.Failures()
	rep.Retries = pool.Retries()
	if cpu1, err := SelfCPU(); err == nil {
		rep.GenCPUAll = CPUPercent(cpu1-cpu0, time.Since(t0))
	}
	return rep, nil
}

func ms(d time.Duration) string {
	if d == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}

// WriteText prints the per-session table and the totals.
func (r *RunReport) WriteText(w io.Writer) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	audioHead := ""
	if r.Audio {
		audioHead = "audio pkt/s\taudio kbit/s\taudio loss %\t"
	}
	fmt.Fprintln(tw, "session\tmode\tverified\tfps\tkbit/s\tpackets\tgaps\tloss %\t"+audioHead+"first pkt\tfirst IDR\tsize\tkeyframes\t")
	for _, s := range r.Sessions {
		mode, size, idr, kf := "light", "-", "-", "-"
		if s.Decode {
			mode, size, idr, kf = "decode", fmt.Sprintf("%dx%d", s.Width, s.Height), ms(s.FirstIDR), fmt.Sprint(s.Keyframes)
		}
		ver := "yes"
		if !s.Window.Verified {
			ver = "NO: " + s.Window.Reason
		}
		audio := ""
		if r.Audio {
			audio = fmt.Sprintf("%.1f\t%.0f\t%.3f\t", s.Window.AudioPPS, s.Window.AudioKbps, 100*s.Window.AudioLoss)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.1f\t%.0f\t%d\t%d\t%.3f\t%s%s\t%s\t%s\t%s\t\n", s.ID, mode, ver, s.Window.FPS, s.Window.Kbps,
			s.Window.Packets, s.Window.Gaps, 100*s.Window.Loss, audio, ms(s.FirstPacket), idr, size, kf)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	loss := 0.0
	if r.Packets+r.Gaps > 0 {
		loss = float64(r.Gaps) / float64(r.Packets+r.Gaps)
	}
	mode := ""
	if r.Mode != "" {
		mode = ", " + string(r.Mode) + " viewers"
	}
	fmt.Fprintf(&b, "\nsessions: %d requested, %d connected, %d verified, %d failed to connect (hold %s, %s%s)\n",
		r.N, r.Connected, r.Verified, r.Failed, r.Hold.Round(time.Millisecond), r.URL, mode)
	fmt.Fprintf(&b, "video: %d packets, %d bytes, %d sequence gaps (loss %.3f%%), %.0f kbit/s per viewer\n",
		r.Packets, r.Bytes, r.Gaps, 100*loss, r.KbpsPerViewer)
	if r.Audio {
		aloss := 0.0
		if r.AudioPackets+r.AudioGaps > 0 {
			aloss = float64(r.AudioGaps) / float64(r.AudioPackets+r.AudioGaps)
		}
		fmt.Fprintf(&b, "audio: %d packets, %d bytes, %d sequence gaps (loss %.3f%%), %.0f kbit/s per viewer\n",
			r.AudioPackets, r.AudioBytes, r.AudioGaps, 100*aloss, r.AudioKbpsPerViewer)
	}
	fmt.Fprintf(&b, "time to first packet: median %s, p95 %s; to first IDR (decode sessions): median %s, p95 %s\n",
		ms(r.FirstPacketP50), ms(r.FirstPkP95), ms(r.FirstIDRP50), ms(r.FirstIDRP95))
	per := 0.0
	if r.Connected > 0 {
		per = r.GenCPUHold / float64(r.Connected)
	}
	fmt.Fprintf(&b, "generator CPU: %.1f%% of one core while holding (%.3f%% per session), %.1f%% over the whole run\n", r.GenCPUHold, per, r.GenCPUAll)
	fmt.Fprintf(&b, "stalls (video pauses > %s): %d\n", stallGap, r.Stalls)
	if r.FeedbackSessions > 0 {
		fmt.Fprintf(&b, "viewer feedback (%d sessions): %.2f receiver reports/s each, %d packets NACKed, %d PLIs, %d RTCP packets not sent\n",
			r.FeedbackSessions, r.ReportsPerViewerSecond, r.NACKed, r.PLIs, r.RTCPUnsent)
	}
	if r.Retries > 0 {
		fmt.Fprintf(&b, "offers repeated after 503/429 with Retry-After: %d\n", r.Retries)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Failures)) {
		fmt.Fprintf(&b, "failed to connect (%d×): %s\n", r.Failures[k], k)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
