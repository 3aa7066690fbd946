package hub

import (
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// minGapTicks is the least a new publisher's first picture is placed after
// the last frame sent: a takeover can come within one frame interval, and
// the picture must still come after everything already sent.
const minGapTicks = av.ClockRate / 1000

// Timeline places one reader's frames on a single PTS timeline across
// publishers. A reader kept through a publisher change (a takeover, or a
// reconnect within the grace period) must see timestamps go on from where
// they were, since its peer's decoder and jitter buffer know nothing of
// publishers, while the new publisher's PTS origin is unrelated to the old
// one's. So each publisher generation gets its own shift, fixed at its
// first IDR: the picture lands after the last frame sent by the wall time
// that passed in between, which is what a peer receiving it live expects,
// and both tracks use the same shift, which keeps lip sync (and a WebRTC
// sender's reports on one media clock valid). Nothing of a later
// generation goes out before its first IDR.
//
// The zero Timeline passes the first generation through unshifted from
// its first frame, audio included (a WebRTC sender: its RTP offsets are
// random anyway). NewSegmentTimeline makes one for a stream of segments.
type Timeline struct {
	// fromIDR: the first generation too starts at its first IDR, placed
	// at start, and no audio plays before its generation's first picture.
	fromIDR bool
	start   int64

	started bool // a frame has been placed
	ready   bool // the current generation is placed from here on
	gen     uint32
	shift   int64
	// segStart is the placed PTS of the current generation's first IDR.
	segStart int64
	// last is the latest PTS placed on either track, at lastAt.
	last   int64
	lastAt time.Time
	// lastAudio is the latest audio PTS placed, so audio never goes back.
	lastAudio int64
	audioSent bool
	changes   int
}

// NewSegmentTimeline is a Timeline on which every generation, the first
// one too, starts with its first IDR, the first placed at start, and
// audio that would play before its generation's first picture is
// dropped: each segment starts with a picture a decoder can start at (an
// SRT reader's MPEG-TS).
func NewSegmentTimeline(start int64) Timeline {
	return Timeline{fromIDR: true, start: start}
}

// Changes counts the publisher changes the reader went through.
func (tl *Timeline) Changes() int { return tl.changes }

// Place returns f's PTS on the timeline, whether f starts a generation
// (its first IDR), and false when f must be skipped: frames of a
// generation before its first IDR, and audio that would go out behind
// audio already placed (or, on a segment timeline, before its segment's
// picture).
func (tl *Timeline) Place(f Frame, now time.Time) (pts int64, first, ok bool) {
	if !tl.started && !tl.fromIDR {
		tl.started, tl.ready, tl.gen = true, true, f.Gen
	}
	if f.Gen != tl.gen {
		tl.gen, tl.ready = f.Gen, false
	}
	if !tl.ready {
		if f.Video == nil || !f.Video.IDR {
			return 0, false, false
		}
		if !tl.started {
			tl.shift = tl.start - f.Video.PTS
		} else {
			gap := max(int64(now.Sub(tl.lastAt)*av.ClockRate/time.Second), minGapTicks)
			tl.shift = tl.last + gap - f.Video.PTS
			tl.changes++
		}
		tl.started, tl.ready, first = true, true, true
		tl.segStart = f.Video.PTS + tl.shift
	}
	audio := false
	switch {
	case f.Video != nil:
		pts = f.Video.PTS + tl.shift
	case f.Audio != nil:
		pts, audio = f.Audio.PTS+tl.shift, true
	case f.Source != nil:
		pts, audio = f.Source.PTS+tl.shift, true
	default:
		return 0, false, false
	}
	if audio {
		if tl.fromIDR && pts < tl.segStart || tl.audioSent && pts <= tl.lastAudio {
			return 0, false, false
		}
		tl.lastAudio, tl.audioSent = pts, true
	}
	if pts > tl.last || tl.lastAt.IsZero() { // the first frame, or later than any placed
		tl.last = pts
	}
	tl.lastAt = now
	return pts, first, true
}
