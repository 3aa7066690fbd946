package ingest

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/srtwhep/srtwhep/pkg/srt"
	"github.com/srtwhep/srtwhep/pkg/tsdemux"
)

// adviseEvery spaces the lost-packet advice lines of one publisher, as the
// demuxer spaces its decode-error summaries: a bad link skips every GOP.
const adviseEvery = 5 * time.Second

// rttFloor stands in for shorter RTTs: below it timers and scheduling, not
// the path, decide how fast a retransmission comes back. It is the RTT of
// the SRT deployment guide's "minimum latency" column.
const rttFloor = 20 * time.Millisecond

// rttMultiplier is how many round trips SRT needs to repair a loss rate
// (0.05 = 5 %), after SRT's deployment guide: each retry of a lost packet
// takes one RTT, and the higher the loss, the likelier a retry is lost too.
// The guide stops at 10 %; past it 8 is a start, not a promise.
func rttMultiplier(loss float64) int {
	switch {
	case loss <= 0.01:
		return 3
	case loss <= 0.03:
		return 4
	case loss <= 0.07:
		return 5
	case loss <= 0.10:
		return 6
	}
	return 8
}

// recommendLatency is the SRT latency for a path with this RTT and loss
// rate, rounded up to 10 ms. When SRT already dropped late packets at a
// latency the rule calls enough (bursty loss, a jittery RTT), it asks for
// half as much again as the current one, so the advice always moves.
func recommendLatency(rtt time.Duration, loss float64, current time.Duration, dropped bool) time.Duration {
	rec := time.Duration(rttMultiplier(loss)) * max(rtt, rttFloor)
	if dropped && rec <= current {
		rec = current * 3 / 2
	}
	return (rec + 10*time.Millisecond - 1).Truncate(10 * time.Millisecond)
}

// lossRate estimates the share of the publisher's packets the path lost
// (before SRT repaired them): retransmissions are counted in received
// packets, so they come out of the packets the publisher sent.
func lossRate(st srt.Stats) float64 {
	sent := st.PacketsReceived - st.PacketsRetransmitted + st.PacketsLost
	if sent <= 0 || st.PacketsLost <= 0 {
		return 0
	}
	return float64(st.PacketsLost) / float64(sent)
}

// recommended is recommendLatency for a connection's statistics.
func recommended(st srt.Stats) time.Duration {
	return recommendLatency(time.Duration(st.RTTMs*float64(time.Millisecond)), lossRate(st),
		time.Duration(st.LatencyMs)*time.Millisecond, st.PacketsDropped > 0)
}

// lossAdvisor tells the operator why a publisher's stream skipped to the
// next keyframe and what latency would have prevented it. The demuxer sees
// the damage, the SRT socket knows whether packets came too late; only the
// publisher's pipeline has both.
type lossAdvisor struct {
	stats func() srt.Stats
	log   *slog.Logger

	// Owned by the demuxer's goroutine.
	lastDropped   int64 // SRT's dropped counter at the previous skip
	lastLog       time.Time
	pendingFrames uint64 // skipped since the last line
	pendingSkips  uint64
	pendingLate   bool
	pendingCause  error
	droppedAtLog  int64 // SRT's dropped counter at the last line
}

func newLossAdvisor(stats func() srt.Stats, log *slog.Logger) *lossAdvisor {
	return &lossAdvisor{stats: stats, log: log}
}

// skip is tsdemux.Config.OnSkip. A skip is SRT's doing when SRT dropped
// packets since the previous one: a loss that SRT repaired in time never
// reaches the demuxer, and SRT drops a late packet before it hands over
// the packets after it, so the count is up to date when the gap shows.
func (a *lossAdvisor) skip(error) bool {
	dropped := a.stats().PacketsDropped
	late := dropped > a.lastDropped
	a.lastDropped = dropped
	return late
}

// skipped is tsdemux.Config.OnSkipped: it logs at most every adviseEvery.
func (a *lossAdvisor) skipped(sk tsdemux.Skip) {
	st := a.stats()
	a.pendingLate = a.pendingLate || sk.TransportLoss
	a.pendingFrames += sk.Frames
	a.pendingSkips++
	a.pendingCause = sk.Cause
	now := time.Now()
	if a.lastLog.IsZero() || now.Sub(a.lastLog) >= adviseEvery {
		a.flush(st, now)
	}
}

// flush logs what is pending; called at the end of the publisher too, so
// the last skips of a short stream are not lost.
func (a *lossAdvisor) flush(st srt.Stats, now time.Time) {
	if a.pendingSkips == 0 {
		return
	}
	frames, skips, cause := a.pendingFrames, a.pendingSkips, a.pendingCause
	a.pendingFrames, a.pendingSkips, a.pendingCause = 0, 0, nil
	late := a.pendingLate
	a.pendingLate = false
	a.lastLog = now
	dropped := st.PacketsDropped - a.droppedAtLog
	a.droppedAtLog = st.PacketsDropped
	attrs := []any{"frames", frames, "skips", skips, "last_error", errText(cause)}
	if !late {
		a.log.Warn(fmt.Sprintf("skipped %d frames to the next keyframe after damaged input; SRT delivered every packet in time, "+
			"so the damage came with the stream: check the encoder and what feeds it", frames), attrs...)
		return
	}
	cur := time.Duration(st.LatencyMs) * time.Millisecond
	rtt := time.Duration(st.RTTMs * float64(time.Millisecond))
	loss := lossRate(st)
	rec := recommended(st)
	a.log.Warn(fmt.Sprintf("skipped %d frames to the next keyframe after lost packets; SRT dropped %d packets that arrived too late: "+
		"raise srt.latency (now %d ms, RTT %d ms, loss %.1f%%: try %d ms) or add latency=%d to the publisher's URL (microseconds in ffmpeg and OBS)",
		frames, dropped, cur.Milliseconds(), rtt.Round(time.Millisecond).Milliseconds(), loss*100, rec.Milliseconds(), rec.Microseconds()),
		append(attrs, "srt_dropped", dropped, "latency_ms", cur.Milliseconds(), "rtt_ms", st.RTTMs,
			"loss_percent", math.Round(loss*1000)/10, "recommended_ms", rec.Milliseconds())...)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
