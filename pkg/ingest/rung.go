package ingest

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/cpubudget"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/vtranscode"
)

// ladder runs a path's rungs on the publisher's goroutine: each rung's
// transcoder starts when its first viewer comes and stops Linger after
// the last one left.
type ladder struct {
	settings LadderSettings
	limits   TranscodeLimits
	log      *slog.Logger
	planned  bool // the ladder was planned for this publisher
	// rungs are below the source, top first; only the publisher's
	// goroutine changes the slice, under mu, which stats takes.
	mu    sync.Mutex
	rungs []*rung
}

// rung is one rendition of the path and its on-demand transcoder.
type rung struct {
	hub.Rung
	pub *hub.Publisher
	log *slog.Logger

	tcs transcoderSlot // none runs while nobody watches

	// Owned by the publisher's goroutine.
	unwatched     bool
	unwatchedFrom int64
	refusedAt     time.Time // the last refusal's log line
	refusals      int       // refusals since that line
	// retryAtIDR: refused, tried again at the next IDR, not every picture.
	retryAtIDR bool
}

// RungStats is one rung as the API and the metrics show it.
type RungStats struct {
	hub.Rung
	Viewers int
	Running bool    // its transcoder runs
	Load    float64 // the transcoder's share of one core, over its last few seconds
	CPU     time.Duration
	Frames  uint64
}

// plan makes the path's rungs once the source's rate is known (the end of
// its first whole GOP), as hub paths of their own, idle.
func (l *ladder) plan(pub *hub.Publisher, info av.StreamInfo, bitrate int) {
	l.planned = true
	rungs := planLadder(l.settings, info, bitrate)
	if rungs == nil {
		return
	}
	for _, r := range rungs[1:] {
		rp, err := pub.AddLadderRendition(r.ID)
		if err != nil {
			l.log.Error("no lower rendition; viewers on weak links skip to keyframes", "rendition", r.ID, "err", err)
			continue
		}
		rp.SetInfo(av.StreamInfo{Codec: av.CodecH264.String(), Profile: "Constrained Baseline",
			Width: r.Width, Height: r.Height, FPS: info.FPS})
		l.mu.Lock()
		l.rungs = append(l.rungs, &rung{Rung: r, pub: rp, log: l.log.With("rendition", r.ID)})
		l.mu.Unlock()
	}
	pub.SetLadder(rungs)
	l.log.Info("renditions ready for viewers on weak links (each transcoded only while watched)", "ladder", ladderText(rungs))
}

func ladderText(rungs []hub.Rung) string {
	s := ""
	for i, r := range rungs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %dx%d %d kbit/s", r.ID, r.Width, r.Height, r.Bitrate/1000)
	}
	return s
}

// feedLadder gives a unit passed through to the path's rungs, planning
// them at the first IDR after a whole GOP (whose rate the automatic
// ladder needs). Only an H.264 path with video: auto has a ladder: the
// source is its top.
func (v *videoPipeline) feedLadder(au *av.AccessUnit) {
	if v.settings.Mode != VideoAuto || v.info.Codec != av.CodecH264.String() {
		return
	}
	if !v.ladder.planned {
		if !au.IDR || v.gopRate <= 0 {
			return
		}
		v.ladder.limits = v.limits
		v.ladder.plan(v.pub, v.info, v.gopRate)
	}
	v.ladder.write(au, v.gop, v.info)
}

// write gives au, a source unit passed through, to every rung; gop is the
// source GOP kept so far (au included), which a starting transcoder
// decodes for its references.
func (l *ladder) write(au *av.AccessUnit, gop []*av.AccessUnit, info av.StreamInfo) {
	for _, r := range l.rungs {
		r.write(au, gop, info, l)
	}
}

func (r *rung) write(au *av.AccessUnit, gop []*av.AccessUnit, info av.StreamInfo, l *ladder) {
	readers := r.pub.Stats().Readers
	tc := r.tcs.transcoder()
	switch {
	case tc == nil && readers > 0:
		if !r.retryAtIDR || au.IDR {
			r.start(au, gop, info, l)
		}
		return
	case tc == nil:
		return
	case readers > 0:
		r.unwatched = false
	case !r.unwatched:
		r.unwatched, r.unwatchedFrom = true, au.PTS
	case time.Duration(au.PTS-r.unwatchedFrom)*time.Second/av.ClockRate >= l.linger():
		r.tcs.stop()
		r.pub.DropCache()
		st, _ := r.tcs.stats()
		r.log.Info("rendition stopped: no viewers", "for", l.linger().String(), "cpu", cpubudget.Percent(st.Load)+" of one core")
		return
	}
	if after, ok := r.pub.TakeIDRRequest(); ok {
		tc.RequestIDR(after)
	}
	if au.IDR && r.tcs.res != nil {
		if load := tc.Stats().Load; load > 0 {
			r.tcs.res.Measured(load)
		}
	}
	tc.Write(au)
}

func (l *ladder) linger() time.Duration {
	if l.settings.Linger > 0 {
		return l.settings.Linger
	}
	return DefaultLadderLinger
}

// start runs the rung's transcoder, from the kept GOP, when the budget
// has room for it; otherwise its viewers stay on the source (their
// senders skip to keyframes when it does not fit their link), and one
// line every refusalSummaryEvery names the budget.
func (r *rung) start(au *av.AccessUnit, gop []*av.AccessUnit, info av.StreamInfo, l *ladder) {
	cfg := vtranscode.Config{
		Logger: r.log, Codec: vtranscode.CodecH264, Bitrate: r.Bitrate, FPS: info.FPS,
		MaxHeight: r.Height, MaxFPS: l.limits.MaxFPS, MaxDecodeArea: l.limits.MaxDecodeArea,
		// The source's IDRs make the rung's, so a viewer switches at the
		// same picture; the interval is only a bound for a source whose
		// GOP grew past it.
		FollowIDR: true, KeyframeInterval: 2 * DefaultMaxKeyframeInterval,
		QueueSize:  vtranscode.DefaultQueueSize + len(gop),
		QueueBytes: vtranscode.DefaultQueueBytes + gopBytes(gop),
		// Only pictures from now on are encoded (the GOP before au is
		// decoded for its references): the rung's first picture is an
		// IDR at the live edge.
		After: au.PTS - 1, HasAfter: true,
	}
	job := vtranscode.PlanJob(cfg, info.Width, info.Height)
	var res *cpubudget.Reservation
	if b := l.limits.Budget; b != nil {
		var err error
		if res, err = b.Reserve(job.Kind(), job.Estimate()); err != nil {
			r.refuse(err)
			return
		}
	}
	tc, err := vtranscode.New(cfg, r.emit)
	if err != nil {
		if res != nil {
			res.Release()
		}
		r.log.Error("rendition's transcoder failed to start; its viewers stay on the source", "err", err)
		return
	}
	r.unwatched, r.refusals, r.retryAtIDR = false, 0, false
	r.tcs.start(tc, res, gop, "")
	held := job.Estimate()
	if res != nil {
		held = res.Held()
	}
	r.log.Info("rendition started for a viewer on a weak link",
		"size", fmt.Sprintf("%dx%d", r.Width, r.Height), "bitrate", r.Bitrate,
		"cost", "estimated "+cpubudget.Percent(held)+" of one core")
}

// refuse logs a rung the budget has no room for, at most once every
// refusalSummaryEvery with the count since.
func (r *rung) refuse(err error) {
	r.refusals, r.retryAtIDR = r.refusals+1, true
	if now := time.Now(); now.Sub(r.refusedAt) >= refusalSummaryEvery {
		r.log.Warn("rendition not started: the transcode CPU budget is used up (transcode.maxCPUPercent); "+
			"its viewers stay on the source and skip to keyframes when their link cannot carry it",
			"refusals", r.refusals, "err", err)
		r.refusedAt, r.refusals = now, 0
	}
}

// emit runs on the transcoder's goroutine.
func (r *rung) emit(au *av.AccessUnit) {
	au.Payloads = fragment(au)
	r.pub.Write(au)
}

// close stops every rung and ends its viewers' readers (they go back to
// the source).
func (l *ladder) close() {
	l.mu.Lock()
	rungs := l.rungs
	l.rungs, l.planned = nil, false
	l.mu.Unlock()
	for _, r := range rungs {
		r.tcs.stop()
		r.pub.Close()
	}
}

// stats describes the rungs.
func (l *ladder) stats() []RungStats {
	l.mu.Lock()
	rungs := l.rungs
	l.mu.Unlock()
	out := make([]RungStats, 0, len(rungs))
	for _, r := range rungs {
		st, _ := r.tcs.stats()
		rs := RungStats{Rung: r.Rung, Viewers: r.pub.Stats().Readers, Running: r.tcs.transcoder() != nil, CPU: st.CPU, Frames: st.FramesOut}
		if rs.Running {
			rs.Load = st.Load
		}
		out = append(out, rs)
	}
	return out
}

func gopBytes(gop []*av.AccessUnit) int {
	n := 0
	for _, au := range gop {
		n += au.Size
	}
	return n
}
