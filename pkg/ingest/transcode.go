package ingest

// The transcoder of a path's video: when it starts (on demand, within
// the transcode budget), what it is fed and told, and what happens when
// the limits refuse it.

import (
	"fmt"
	"strings"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/cpubudget"
	"github.com/srtwhep/srtwhep/pkg/vtranscode"
)

// start puts the transcoder in the path's video, fed with the GOP kept
// so far; its output continues after the last picture passed through.
// False when it could not start: the stream then passes through.
//
// A transcode the limits refuse (transcode.maxCPUPercent,
// transcode.maxDecodeArea) withholds the path's video when browsers
// cannot play it as published (true: the video is dealt with, by
// withholding it), and passes it through when they can (a long GOP:
// false, and tried again at the next IDR).
func (v *videoPipeline) start(r transcodeReason) bool {
	after := v.written
	if !v.wrote {
		after = noAfter
	}
	if !v.run(r, after) {
		return v.withheld
	}
	v.pub.SetInfo(transcodedInfo(v.info))
	v.ladder.close() // the path is transcoded: its viewers' top is no longer the source
	v.pub.SetLadder(nil)
	v.logStart(r)
	return true
}

// logStart says once why the transcoder runs, what it costs and how to
// avoid it.
//
// The cost is the estimate the budget holds for it (the cost model,
// corrected by the transcodes measured so far); the measured figure
// follows in its own line once the transcoder has run a few seconds.
func (v *videoPipeline) logStart(r transcodeReason) {
	br, keyint, preset := v.tcs.transcoder().Params()
	job := v.job()
	held := 0.0
	if v.tcs.res != nil {
		held = v.tcs.res.Held()
	} else {
		held = job.Estimate()
	}
	v.log.Info("video transcoded to H.264 for browsers", "reason", r.why,
		"cost", fmt.Sprintf("estimated %s of one core (%dx%d at %.0f fps to %dx%d at %.0f fps, libx264 %s)%s",
			cpubudget.Percent(held), job.InW, job.InH, job.InFPS, job.OutW, job.OutH, job.OutFPS, preset, v.budgetText()),
		"bitrate", br, "keyframe_interval", keyint.String(), "fix", r.fix)
}

// budgetText says how much of the budget is in use, for log lines.
func (v *videoPipeline) budgetText() string {
	if v.limits.Budget == nil {
		return ""
	}
	st := v.limits.Budget.Stats()
	if st.Limit == 0 {
		return fmt.Sprintf("; transcodes use %s of one core, no transcode.maxCPUPercent limit", cpubudget.Percent(st.Used))
	}
	return fmt.Sprintf("; transcodes use %s of the %s of one core transcode.maxCPUPercent allows", cpubudget.Percent(st.Used), cpubudget.Percent(st.Limit))
}

// measure hands the running transcoder's measured cost to the budget,
// where it replaces the estimate and corrects the next ones, and logs
// the first measurement.
func (v *videoPipeline) measure() {
	tc := v.tcs.transcoder()
	if tc == nil || v.tcs.res == nil {
		return
	}
	st := tc.Stats()
	if st.Load <= 0 {
		return
	}
	estimate := v.tcs.res.Held()
	v.tcs.res.Measured(st.Load)
	if !v.measuredLogged {
		v.measuredLogged = true
		v.log.Info("video transcoder cost measured", "cpu", cpubudget.Percent(st.Load)+" of one core",
			"estimated", cpubudget.Percent(estimate),
			"output", fmt.Sprintf("%dx%d", st.OutWidth, st.OutHeight), "budget", strings.TrimPrefix(v.budgetText(), "; "))
	}
}

// config is the transcoder's configuration for the path's stream now.
func (v *videoPipeline) config(after int64) vtranscode.Config {
	// H.265 in is decoded as such: the decoder is ready for the paths whose
	// viewers did not offer H.265, once tsdemux delivers it.
	codec := vtranscode.CodecH264
	if v.info.Codec == "H265" {
		codec = vtranscode.CodecH265
	}
	return vtranscode.Config{
		Logger: v.log, Codec: codec, Bitrate: v.sourceBitrate(), FPS: v.info.FPS,
		QueueSize:  vtranscode.DefaultQueueSize + len(v.gop),
		QueueBytes: vtranscode.DefaultQueueBytes + v.gopSize,
		After:      after, HasAfter: after != noAfter,
		MaxHeight: v.limits.MaxHeight, MaxFPS: v.limits.MaxFPS, MaxDecodeArea: v.limits.MaxDecodeArea,
	}
}

// job is the work a transcoder of the stream now does.
func (v *videoPipeline) job() vtranscode.Job {
	return vtranscode.PlanJob(v.config(noAfter), v.info.Width, v.info.Height)
}

// noAfter: nothing was written yet, every picture may come out.
const noAfter = -1 << 63

// run starts a transcoder fed with the kept GOP whose output begins after
// the picture presented at after.
//
// The limits decide first: a source larger than transcode.maxDecodeArea,
// or a transcode whose estimated cost does not fit the CPU budget, is
// refused (false) before anything is allocated.
func (v *videoPipeline) run(r transcodeReason, after int64) bool {
	if why := vtranscode.TooLarge(v.info.Width, v.info.Height, v.limits.MaxDecodeArea); why != "" {
		v.refuse(r, ReasonPictureTooLarge, v.tooLargeProblem(r))
		return false
	}
	cfg := v.config(after)
	var res *cpubudget.Reservation
	if b := v.limits.Budget; b != nil {
		job := vtranscode.PlanJob(cfg, v.info.Width, v.info.Height)
		var err error
		if res, err = b.Reserve(job.Kind(), job.Estimate()); err != nil {
			v.refuse(r, ReasonTranscodeBudget, budgetProblem(r, job, err))
			return false
		}
	}
	tc, err := vtranscode.New(cfg, v.emit)
	if err != nil {
		if res != nil {
			res.Release()
		}
		v.log.Error("video transcoder failed to start; the stream passes through as published", "reason", r.why, "err", err)
		return false
	}
	if v.withheld {
		v.withheld = false
		v.refusals.cleared()
		v.log.Info("video transcoder started after its refusal; viewers may play", "refusals", v.refusedSince)
	}
	v.refusedSince, v.refuseLogged = 0, time.Time{}
	v.measuredLogged, v.reason = false, r
	v.tcs.start(tc, res, v.gop, r.why)
	v.rate, _, _ = tc.Params()
	return true
}

// sourceBitrate estimates the publisher's video bitrate from the GOP kept,
// so the transcoded stream costs viewers what the original would have.
func (v *videoPipeline) sourceBitrate() int {
	if len(v.gop) < 2 {
		return 0 // the transcoder's default
	}
	lo, hi := v.gop[0].PTS, v.gop[0].PTS
	for _, au := range v.gop {
		lo, hi = min(lo, au.PTS), max(hi, au.PTS)
	}
	frame := int64(av.ClockRate / 30)
	if v.info.FPS > 0 {
		frame = int64(av.ClockRate / v.info.FPS)
	}
	span := hi - lo + frame
	return int(int64(v.gopSize) * 8 * av.ClockRate / span)
}

// followRate gives the transcoder the rate of the GOP that just ended
// when it moved far from what the encoder runs at: a publisher that
// raises its bitrate (a scene, a setting) gets the quality it pays for,
// and each change costs an IDR, so small ones are ignored.
func (v *videoPipeline) followRate() {
	tc := v.tcs.transcoder()
	if tc == nil || v.gopFull {
		return
	}
	r := v.sourceBitrate()
	if r <= 0 || v.rate <= 0 {
		return
	}
	if ratio := float64(r) / float64(v.rate); ratio > 1+rateSlack || ratio < 1/(1+rateSlack) {
		tc.SetBitrate(r)
		v.log.Debug("video transcoder follows the source's bitrate", "from", v.rate, "to", r)
		v.rate = r
	}
}

// refuse handles a transcode the limits refused: when the path's video
// cannot be played without it, the video is withheld and its viewers
// are told why (a 409 problem naming the setting); otherwise (a long
// GOP, the rendition of an H.265 path) it plays as before, and the
// transcode is tried again at the next IDR. Either way one log line,
// then at most one every refusalSummaryEvery with the count.
func (v *videoPipeline) refuse(r transcodeReason, reason, text string) {
	v.tryAtIDR = true
	if v.refusals.tried != nil {
		v.refusals.tried(reason)
	}
	needed := v.rend == nil && r != reasonLongGOP
	if needed {
		v.withhold(r, reason, text)
	}
	v.refusedSince++
	if now := time.Now(); now.Sub(v.refuseLogged) >= refusalSummaryEvery {
		msg := "video transcode refused; the stream passes through as published"
		switch {
		case needed:
			msg = "video transcode refused; viewers get no picture until it fits"
		case v.rend != nil:
			msg = "video transcode refused; viewers without H.265 get no picture until it fits"
		}
		v.log.Warn(msg, "reason", reason, "refusals", v.refusedSince, "detail", text)
		v.refuseLogged, v.refusedSince = now, 0
	}
}

// withhold stops the path's video for a refused transcode, and tells its
// viewers (once per refusal; the record stays while it holds).
func (v *videoPipeline) withhold(r transcodeReason, reason, text string) {
	v.wanted = r
	if !v.withheld || v.withheldReason != reason {
		v.refusals.report(reason, text)
	}
	v.withheld, v.withheldReason, v.idle = true, reason, false
}

// tooLargeProblem is the picture-too-large problem for viewers.
func (v *videoPipeline) tooLargeProblem(r transcodeReason) string {
	return fmt.Sprintf("the stream must be transcoded for browsers (%s), but %s. Fix on the encoder: send at most 3840x2160 "+
		"(ffmpeg -vf scale=-2:2160; OBS Settings > Video > Output (Scaled) Resolution; GStreamer videoscale), "+
		"or avoid the transcode (%s); or, on the server, raise transcode.maxDecodeArea.",
		r.why, vtranscode.TooLarge(v.info.Width, v.info.Height, v.limits.MaxDecodeArea), r.fix)
}

// budgetProblem is the transcode-budget problem for viewers.
func budgetProblem(r transcodeReason, job vtranscode.Job, err error) string {
	return fmt.Sprintf("the stream must be transcoded for browsers (%s), and the server's transcode CPU budget is used up: "+
		"%dx%d at %.0f fps to %dx%d at %.0f fps %v (transcode.maxCPUPercent). "+
		"Fix on the encoder, so nothing is transcoded: %s; or, on the server, raise transcode.maxCPUPercent, or lower transcode.maxHeight or transcode.maxFrameRate.",
		r.why, job.InW, job.InH, job.InFPS, job.OutW, job.OutH, job.OutFPS, err, r.fix)
}
