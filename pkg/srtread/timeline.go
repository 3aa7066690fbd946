package srtread

import (
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// startPTS is where a reader's timeline starts: at 1 s, so that the PCR,
// which runs 100 ms behind the video, never goes below zero, and so that a
// player never sees a timestamp near the 33-bit wrap at the start.
const startPTS = av.ClockRate

// minGapTicks is the least a new publisher's first picture is placed
// after the last frame sent (a takeover can come within a frame interval).
const minGapTicks = av.ClockRate / 1000

// timeline places one reader's frames on a single PTS timeline across
// publishers. A player knows nothing of our publishers: when the path
// changes hands its TS must go on, while the new publisher's PTS origin is
// unrelated to the old one's. Each publisher generation gets its own shift,
// fixed at its first IDR, which lands after the last frame sent by the
// wall time that passed in between (what a player receiving it live
// expects); both tracks use the same shift, which keeps lip sync. Nothing
// of a generation goes out before its first IDR, so every segment starts
// with a picture a decoder can start at.
type timeline struct {
	started bool // a frame has been placed
	ready   bool // the current generation's first IDR has been placed
	gen     uint32
	shift   int64
	// segStart is the placed PTS of the current generation's first IDR:
	// audio from before it would play before the first picture.
	segStart int64
	// last is the latest PTS placed on either track, at lastAt.
	last   int64
	lastAt time.Time
	// lastAudio is the latest audio PTS placed, so audio never goes back.
	lastAudio int64
	audioSent bool
	// changes counts the publisher changes the reader went through.
	changes int
}

// place returns f's PTS on the reader's timeline, whether f starts a
// segment (the first picture of a generation), and false when f must be
// skipped: frames of a generation before its first IDR, and audio that
// would play before that IDR or behind audio already placed.
func (tl *timeline) place(f hub.Frame, now time.Time) (pts int64, first, ok bool) {
	if f.Gen != tl.gen {
		tl.gen, tl.ready = f.Gen, false
	}
	if !tl.ready {
		if f.Video == nil || !f.Video.IDR {
			return 0, false, false
		}
		if !tl.started {
			tl.shift = startPTS - f.Video.PTS
		} else {
			gap := max(int64(now.Sub(tl.lastAt)*av.ClockRate/time.Second), minGapTicks)
			tl.shift = tl.last + gap - f.Video.PTS
			tl.changes++
		}
		tl.started, tl.ready, first = true, true, true
		tl.segStart = f.Video.PTS + tl.shift
	}
	switch {
	case f.Video != nil:
		pts = f.Video.PTS + tl.shift
	case f.Source != nil:
		pts = f.Source.PTS + tl.shift
		if pts < tl.segStart || tl.audioSent && pts <= tl.lastAudio {
			return 0, false, false
		}
		tl.lastAudio, tl.audioSent = pts, true
	default:
		return 0, false, false
	}
	if pts > tl.last || tl.lastAt.IsZero() {
		tl.last = pts
	}
	tl.lastAt = now
	return pts, first, true
}
