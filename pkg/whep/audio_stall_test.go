package whep

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// queueModel is the hub's drop rule for one reader taking audio, applied
// to what the test writes while it controls how far the writer got: video
// drops to the next IDR, audio enters whenever there is room.
type queueModel struct {
	q, capacity        int
	dropping           bool
	queued             []avFrame
	videoDrops         int
	audioDrops         int
	audioWhileDropping int
}

func (m *queueModel) write(f avFrame) {
	switch {
	case f.a != nil && m.q < m.capacity:
		m.q++
		m.queued = append(m.queued, f)
		if m.dropping {
			m.audioWhileDropping++
		}
	case f.a != nil:
		m.audioDrops++
	case !f.v.IDR && m.dropping:
		m.videoDrops++
	case m.q < m.capacity:
		m.q++
		m.queued = append(m.queued, f)
		m.dropping = false
	default:
		m.videoDrops++
		m.dropping = true
	}
}

// TestStalledViewerKeepsAudio stalls a real viewer's writer (BeforeWrite)
// frame by frame: once its queue overflows, video is dropped up to the
// next IDR while audio keeps entering the queue as it drains, and the
// drops are counted per kind. What the viewer finally receives is exactly
// what the rule let through.
func TestStalledViewerKeepsAudio(t *testing.T) {
	clip := makeClip(t, 16, 8) // IDRs at frames 0 and 8
	c := newAVClip(t, clip)
	h := hub.New(hub.Config{QueueSize: 4}) // 4 + 6 slots with audio

	var stalled atomic.Bool
	arrived := make(chan struct{}) // the writer holds a frame and waits
	tokens := make(chan struct{})  // lets it write one
	release := make(chan struct{})
	var releaseOnce sync.Once
	unstall := func() {
		stalled.Store(false)
		releaseOnce.Do(func() { close(release) })
	}
	url := startHubServer(t, h, func(cfg *Config) {
		cfg.BeforeWrite = func(string) <-chan struct{} {
			if !stalled.Load() {
				return nil
			}
			hold := make(chan struct{})
			go func() {
				defer close(hold)
				select {
				case arrived <- struct{}{}:
				case <-release:
					return
				}
				select {
				case <-tokens:
				case <-release:
				}
			}()
			return hold
		}
	})
	t.Cleanup(unstall) // before the server stops: cleanups run last first
	pub, err := h.Publish("live/av", "test")
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	pub.SetAudio(true)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	viewer := dialAV(t, ctx, url+"/live/av/whep", true)
	waitAttached(t, h, 1)

	wait := func(what string, ch chan struct{}, send bool) {
		t.Helper()
		var err error
		if send {
			select {
			case ch <- struct{}{}:
			case <-ctx.Done():
				err = ctx.Err()
			}
		} else {
			select {
			case <-ch:
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	m := queueModel{capacity: 10}
	stalled.Store(true)
	next := 0
	write := func() {
		f := c.frames[next]
		next++
		m.write(f)
		f.writeTo(pub)
	}
	write() // the IDR: the writer takes it and stops in BeforeWrite
	wait("writer at the first frame", arrived, false)
	m.q--
	for m.videoDrops == 0 || m.audioDrops == 0 {
		write()
	}
	// Let 8 frames out: room for 8, and video waits for its IDR.
	for range 8 {
		wait("token", tokens, true)
		wait("writer at the next frame", arrived, false)
		m.q--
	}
	// Up to the IDR that ends the drop, and one frame more.
	for {
		if next == len(c.frames) {
			t.Fatal("the clip ended before video resumed at an IDR")
		}
		write()
		if last := m.queued[len(m.queued)-1]; last.v != nil && last.v.IDR && last.v.PTS > 0 {
			break
		}
	}
	write()
	unstall()

	var wantVideo, wantAudio []int64
	for _, f := range m.queued {
		if f.v != nil {
			wantVideo = append(wantVideo, f.v.PTS)
		} else {
			wantAudio = append(wantAudio, f.a.PTS)
		}
	}
	testkit.WaitFor(t, 20*time.Second, "every queued frame at the viewer", func() bool {
		video, audio := viewer.received(t, c)
		return len(video) >= len(wantVideo) && len(audio) >= len(wantAudio)
	})
	video, audio := viewer.received(t, c)
	if !slices.Equal(video, wantVideo) {
		t.Errorf("video PTS received %v, want %v", video, wantVideo)
	}
	if !slices.Equal(audio, wantAudio) {
		t.Errorf("audio PTS received %v, want %v", audio, wantAudio)
	}
	if m.audioWhileDropping == 0 {
		t.Fatal("the scenario queued no audio while video waited for its IDR; it tests nothing")
	}
	st := pub.Stats()
	if st.VideoFramesDropped != uint64(m.videoDrops) || st.AudioFramesDropped != uint64(m.audioDrops) {
		t.Errorf("hub drops video %d audio %d, want %d, %d", st.VideoFramesDropped, st.AudioFramesDropped, m.videoDrops, m.audioDrops)
	}
	if vs := viewer.sess.Stats(); vs.SeqGaps != 0 || vs.BrokenAUs != 0 {
		t.Errorf("viewer saw %d sequence gaps and %d broken pictures; drops must leave neither", vs.SeqGaps, vs.BrokenAUs)
	}
	t.Logf("video dropped %d, audio dropped %d, audio queued while video waited for its IDR %d",
		m.videoDrops, m.audioDrops, m.audioWhileDropping)
}
