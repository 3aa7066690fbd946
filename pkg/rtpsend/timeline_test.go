package rtpsend

import (
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// TestTimeline: a second publisher's frames continue the session's
// timeline after the wall-clock gap, from its first IDR, with audio
// sharing the video's shift and never going back.
func TestTimeline(t *testing.T) {
	video := func(gen uint32, pts int64, idr bool) hub.Frame {
		return hub.Frame{Gen: gen, Video: &av.AccessUnit{PTS: pts, IDR: idr}}
	}
	audio := func(gen uint32, pts int64) hub.Frame {
		return hub.Frame{Gen: gen, Audio: &av.AudioFrame{PTS: pts}}
	}
	t0 := time.Unix(1000, 0)
	steps := []struct {
		f    hub.Frame
		at   time.Duration
		want int64 // -1: skipped
	}{
		{video(3, 900000, true), 0, 900000},
		{audio(3, 901000), 10 * time.Millisecond, 901000},
		{video(3, 903000, false), 33 * time.Millisecond, 903000},
		// The publisher left; a new one starts 2 s later with PTS near 0.
		{audio(4, 100), 2 * time.Second, -1}, // before its first IDR
		{video(4, 3000, true), 2033 * time.Millisecond, 903000 + 2*av.ClockRate},
		{audio(4, 2000), 2040 * time.Millisecond, 903000 + 2*av.ClockRate - 1000},
		{audio(4, 1500), 2045 * time.Millisecond, -1}, // out of order: behind audio already sent
		{audio(4, 4000), 2050 * time.Millisecond, 903000 + 2*av.ClockRate + 1000},
		{video(4, 6000, false), 2066 * time.Millisecond, 903000 + 2*av.ClockRate + 3000},
	}
	var tl timeline
	for i, s := range steps {
		got, ok := tl.place(s.f, t0.Add(s.at))
		if s.want < 0 {
			if ok {
				t.Errorf("step %d: placed at %d, want skipped", i, got)
			}
			continue
		}
		if !ok || got != s.want {
			t.Errorf("step %d: place = %d, %v; want %d", i, got, ok, s.want)
		}
	}
}
