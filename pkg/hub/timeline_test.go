package hub

import (
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// TestTimeline: on the zero Timeline a second publisher's frames continue
// the reader's timeline after the wall-clock gap, from its first IDR, with
// audio sharing the video's shift and never going back.
func TestTimeline(t *testing.T) {
	video := func(gen uint32, pts int64, idr bool) Frame {
		return Frame{Gen: gen, Video: &av.AccessUnit{PTS: pts, IDR: idr}}
	}
	audio := func(gen uint32, pts int64) Frame {
		return Frame{Gen: gen, Audio: &av.AudioFrame{PTS: pts}}
	}
	steps := []placeStep{
		{video(3, 900000, true), 0, 900000, false},
		{audio(3, 901000), 10 * time.Millisecond, 901000, false},
		{video(3, 903000, false), 33 * time.Millisecond, 903000, false},
		// The publisher left; a new one starts 2 s later with PTS near 0.
		{audio(4, 100), 2 * time.Second, -1, false}, // before its first IDR
		{video(4, 3000, true), 2033 * time.Millisecond, 903000 + 2*av.ClockRate, false},
		{audio(4, 2000), 2040 * time.Millisecond, 903000 + 2*av.ClockRate - 1000, false},
		{audio(4, 1500), 2045 * time.Millisecond, -1, false}, // out of order: behind audio already sent
		{audio(4, 4000), 2050 * time.Millisecond, 903000 + 2*av.ClockRate + 1000, false},
		{video(4, 6000, false), 2066 * time.Millisecond, 903000 + 2*av.ClockRate + 3000, false},
	}
	var tl Timeline
	checkPlaces(t, &tl, steps, false)
	if tl.Changes() != 1 {
		t.Errorf("%d publisher changes, want 1", tl.Changes())
	}
}

// TestSegmentTimeline: a segment timeline starts at its start PTS with the
// first IDR, drops what comes before it and audio that would play before
// a segment's picture, and marks each segment's first picture.
func TestSegmentTimeline(t *testing.T) {
	video := func(gen uint32, pts int64, idr bool) Frame {
		return Frame{Gen: gen, Video: &av.AccessUnit{PTS: pts, IDR: idr}}
	}
	audio := func(gen uint32, pts int64) Frame {
		return Frame{Gen: gen, Source: &av.AudioUnit{PTS: pts}}
	}
	const start = av.ClockRate
	steps := []placeStep{
		{audio(1, 500000), 0, -1, false},        // before the first IDR
		{video(1, 600000, false), 0, -1, false}, // not an IDR
		{video(1, 900000, true), 0, start, true},
		{audio(1, 899000), time.Millisecond, -1, false}, // plays before the picture
		{audio(1, 901000), 2 * time.Millisecond, start + 1000, false},
		{video(1, 903000, false), 33 * time.Millisecond, start + 3000, false},
		{audio(2, 100), 2 * time.Second, -1, false},
		{video(2, 3000, true), 2033 * time.Millisecond, start + 3000 + 2*av.ClockRate, true},
		{audio(2, 2000), 2040 * time.Millisecond, -1, false}, // before the segment's picture
		{audio(2, 4000), 2050 * time.Millisecond, start + 3000 + 2*av.ClockRate + 1000, false},
	}
	tl := NewSegmentTimeline(start)
	checkPlaces(t, &tl, steps, true)
	if tl.Changes() != 1 {
		t.Errorf("%d publisher changes, want 1", tl.Changes())
	}
}

type placeStep struct {
	f     Frame
	at    time.Duration // after the first step
	want  int64         // -1: skipped
	first bool
}

// checkPlaces places the steps' frames on tl in turn, checking the first
// flags too with first.
func checkPlaces(t *testing.T, tl *Timeline, steps []placeStep, first bool) {
	t.Helper()
	t0 := time.Unix(1000, 0)
	for i, s := range steps {
		got, isFirst, ok := tl.Place(s.f, t0.Add(s.at))
		if s.want < 0 {
			if ok {
				t.Errorf("step %d: placed at %d, want skipped", i, got)
			}
			continue
		}
		if !ok || got != s.want || (first && isFirst != s.first) {
			t.Errorf("step %d: Place = %d, %v, %v; want %d, %v", i, got, isFirst, ok, s.want, s.first)
		}
	}
}
