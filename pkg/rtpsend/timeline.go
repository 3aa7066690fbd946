package rtpsend

import (
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// minGapTicks is the least a new publisher's first picture is placed after
// the last frame sent: a takeover can come within one frame interval, and
// the picture must still come after everything already sent.
const minGapTicks = av.ClockRate / 1000

// timeline places every frame of one session on a single PTS timeline
// across publishers. A viewer kept through a publisher change (a takeover,
// or a reconnect within the grace period) must see RTP timestamps go on
// from where they were, since its decoder and jitter buffer know nothing
// of publishers, while the new publisher's PTS origin is unrelated to the
// old one's. So each publisher generation gets its own shift, fixed at its
// first IDR: the picture lands after the last frame sent by the wall time
// that passed in between, which is what the viewer's jitter buffer
// expects, and both tracks use the same shift, which keeps lip sync and the
// sender reports' shared clock (mediaClock) valid.
type timeline struct {
	started bool
	gen     uint32
	// waiting: a new generation has begun and its first IDR has not
	// arrived; nothing of it can be placed before then.
	waiting bool
	shift   int64
	// changes counts the publisher changes the session went through.
	changes int
	// last is the latest session PTS sent on either track, at lastAt.
	last   int64
	lastAt time.Time
	// lastAudio is the latest audio PTS sent, to keep Opus timestamps
	// increasing across the change.
	lastAudio int64
	audioSent bool
}

// place returns f's PTS on the session's timeline, or false when f must be
// skipped: frames of a new publisher before its first IDR, and audio that
// would go out behind audio already sent.
func (tl *timeline) place(f hub.Frame, now time.Time) (int64, bool) {
	switch {
	case !tl.started:
		tl.started, tl.gen = true, f.Gen
	case f.Gen != tl.gen:
		tl.gen, tl.waiting = f.Gen, true
	}
	if tl.waiting {
		if f.Video == nil || !f.Video.IDR {
			return 0, false
		}
		gap := max(now.Sub(tl.lastAt)*av.ClockRate/time.Second, minGapTicks)
		tl.shift = tl.last + int64(gap) - f.Video.PTS
		tl.waiting = false
		tl.changes++
	}
	pts := framePTS(f) + tl.shift
	if f.Audio != nil {
		if tl.audioSent && pts <= tl.lastAudio {
			return 0, false
		}
		tl.lastAudio, tl.audioSent = pts, true
	}
	if pts > tl.last || tl.lastAt.IsZero() { // the first frame, or later than any sent
		tl.last = pts
	}
	tl.lastAt = now
	return pts, true
}

func framePTS(f hub.Frame) int64 {
	if f.Video != nil {
		return f.Video.PTS
	}
	return f.Audio.PTS
}
