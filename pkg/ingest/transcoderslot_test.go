package ingest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/testkit/h264clip"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/vtranscode"
)

// TestTranscoderSlotCountersNeverGoDown: the API and /metrics read a
// slot's counters while the publisher's goroutine stops its transcoder
// (a rung nobody watches any more, a path going back to passthrough).
// Prometheus takes a counter that goes down for a restart, so no read,
// however it falls against the stop, may see fewer frames than one
// before it; and the frames are all still counted once the slot is empty.
// Two rounds: the second checks the sum across transcoders.
func TestTranscoderSlotCountersNeverGoDown(t *testing.T) {
	clip := h264clip.Make(t, 30, 30)
	var s transcoderSlot

	var stopReading atomic.Bool
	var wg sync.WaitGroup
	var went string
	wg.Go(func() {
		var last vtranscode.Stats
		for !stopReading.Load() {
			st, _ := s.stats()
			if st.FramesOut < last.FramesOut || st.FramesIn < last.FramesIn || st.CPU < last.CPU {
				went = fmt.Sprintf("counters went down: %+v, then %+v", last, st)
				return
			}
			last = st
		}
	})

	var out atomic.Uint64
	for round := 1; round <= 2; round++ {
		tc, err := vtranscode.New(vtranscode.Config{Codec: vtranscode.CodecH264, FPS: 30, Bitrate: 300_000,
			QueueSize: len(clip)}, func(*av.AccessUnit) { out.Add(1) })
		if err != nil {
			t.Fatal(err)
		}
		s.start(tc, nil, clip, "test")
		want := uint64(round * len(clip))
		testkit.WaitFor(t, 20*time.Second, "the clip transcoded", func() bool { return out.Load() >= want })
		s.stop()
		if s.transcoder() != nil {
			t.Fatal("a transcoder is still running after stop")
		}
		if st, why := s.stats(); st.FramesOut != want || why != "test" {
			t.Fatalf("round %d: stats after stop: %d frames out (%q), want %d", round, st.FramesOut, why, want)
		}
	}
	stopReading.Store(true)
	wg.Wait()
	if went != "" {
		t.Fatal(went)
	}
}
