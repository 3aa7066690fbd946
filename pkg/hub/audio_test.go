package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/av"
)

func mkAF(pts int) *av.AudioFrame {
	return &av.AudioFrame{PTS: int64(pts), Duration: 960, Data: make([]byte, 10)}
}

// drainFrames returns what is queued for r as "V<pts>" / "A<pts>" (with a
// trailing "*" for catch-up frames), without waiting for more.
func drainFrames(t *testing.T, r *Reader) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out []string
	for {
		f, err := r.RecvFrame(ctx)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("RecvFrame: %v", err)
			}
			return out
		}
		var s string
		switch {
		case f.Video != nil && f.Audio == nil:
			s = fmt.Sprintf("V%d", f.Video.PTS)
		case f.Audio != nil && f.Video == nil:
			s = fmt.Sprintf("A%d", f.Audio.PTS)
		default:
			t.Fatalf("frame with video %v and audio %v: want exactly one", f.Video, f.Audio)
		}
		if f.CatchUp {
			s += "*"
		}
		out = append(out, s)
	}
}

func wantFrames(t *testing.T, what string, got []string, want string) {
	t.Helper()
	if g := strings.Join(got, " "); g != want {
		t.Errorf("%s:\n got %s\nwant %s", what, g, want)
	}
}

// With QueueSize 4 an audio reader's queue holds 4+6 frames. Video drops
// to the next IDR exactly as without audio, audio enters whenever there is
// room (also while video waits for its IDR), and the drops are counted per
// kind.
func TestAudioKeepsFlowingWhileVideoDrops(t *testing.T) {
	h := New(Config{QueueSize: 4})
	pub := mustPublish(t, h, "live/a")
	pub.SetAudio(true)
	r := mustReader(t, h, "live/a", "s1")
	if !r.HasAudio() {
		t.Fatal("HasAudio() = false on a path with audio")
	}
	r.AttachAV()

	pub.WriteAudio(mkAF(0)) // before any IDR: sound needs no picture
	pub.Write(mkAU(0, true))
	for i := 1; i <= 4; i++ {
		pub.Write(mkAU(i, false))
		pub.WriteAudio(mkAF(i))
	}
	pub.Write(mkAU(5, false)) // full: video waits for the next IDR
	pub.WriteAudio(mkAF(5))   // full: this frame is lost
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var head []string
	for range 4 {
		f, err := r.RecvFrame(ctx)
		if err != nil {
			t.Fatal(err)
		}
		head = append(head, fmt.Sprint(f.Video != nil, ptsOf(f)))
	}
	wantFrames(t, "first four", head, "false 0 true 0 true 1 false 1")

	pub.Write(mkAU(6, false)) // dropped: still waiting for an IDR
	pub.WriteAudio(mkAF(6))   // room again: queued
	pub.WriteAudio(mkAF(7))
	pub.Write(mkAU(7, false)) // dropped
	pub.Write(mkAU(8, true))  // resumes
	pub.WriteAudio(mkAF(8))
	wantFrames(t, "rest", drainFrames(t, r), "V2 A2 V3 A3 V4 A4 A6 A7 V8 A8")

	st := pub.Stats()
	if st.VideoFramesDropped != 3 || st.AudioFramesDropped != 1 || st.FramesDropped != 4 {
		t.Errorf("Stats drops video %d audio %d total %d, want 3, 1, 4",
			st.VideoFramesDropped, st.AudioFramesDropped, st.FramesDropped)
	}
	if st.AudioFramesIn != 9 || st.AudioBytesIn != 90 || st.FramesIn != 9 {
		t.Errorf("Stats in: audio %d frames %d bytes, video %d frames; want 9, 90, 9",
			st.AudioFramesIn, st.AudioBytesIn, st.FramesIn)
	}
	if r.Dropped() != 4 || r.DroppedAudio() != 1 {
		t.Errorf("reader Dropped %d DroppedAudio %d, want 4, 1", r.Dropped(), r.DroppedAudio())
	}
}

func ptsOf(f Frame) int64 {
	if f.Video != nil {
		return f.Video.PTS
	}
	return f.Audio.PTS
}

// A viewer that did not negotiate audio gets none, and its queue is as
// long as on a path without audio, so it lags no further than before.
func TestVideoOnlyReaderOnAudioPath(t *testing.T) {
	h := New(Config{QueueSize: 4})
	pub := mustPublish(t, h, "live/a")
	pub.SetAudio(true)
	r := mustReader(t, h, "live/a", "s1")
	r.Attach()
	pub.Write(mkAU(0, true))
	for i := 1; i <= 5; i++ {
		pub.WriteAudio(mkAF(i))
		pub.Write(mkAU(i, false))
	}
	wantFrames(t, "video-only reader", drainFrames(t, r), "V0 V1 V2 V3")
	if st := pub.Stats(); st.VideoFramesDropped != 2 || st.AudioFramesDropped != 0 {
		t.Errorf("drops video %d audio %d, want 2, 0", st.VideoFramesDropped, st.AudioFramesDropped)
	}
}

// Audio is offered at a join only when the publisher had declared it by
// then; later joins see the change.
func TestHasAudioIsDecidedAtJoin(t *testing.T) {
	h := New(Config{QueueSize: 4})
	pub := mustPublish(t, h, "live/a")
	before := mustReader(t, h, "live/a", "before")
	pub.SetAudio(true)
	after := mustReader(t, h, "live/a", "after")
	pub.SetAudio(false)
	late := mustReader(t, h, "live/a", "late")
	if before.HasAudio() || !after.HasAudio() || late.HasAudio() {
		t.Fatalf("HasAudio before/after/late = %v/%v/%v, want false/true/false",
			before.HasAudio(), after.HasAudio(), late.HasAudio())
	}
	before.AttachAV() // no audio at its join: video only
	after.AttachAV()
	pub.Write(mkAU(0, true))
	pub.WriteAudio(mkAF(1))
	wantFrames(t, "before", drainFrames(t, before), "V0")
	wantFrames(t, "after", drainFrames(t, after), "V0 A1")
}

// The GOP cache replays audio from the IDR's PTS on, interleaved as it
// arrived: audio muxed ahead of its IDR is picked up, audio muxed so late
// that it plays before the IDR is left out.
func TestGOPCacheReplaysAudioFromIDR(t *testing.T) {
	h := New(Config{QueueSize: 16})
	pub := mustPublish(t, h, "live/a")
	pub.SetAudio(true)
	pub.WriteAudio(mkAF(50)) // before the IDR's PTS
	pub.WriteAudio(mkAF(95)) // ahead of its IDR
	pub.Write(mkAU(90, true))
	pub.WriteAudio(mkAF(80)) // late, before the IDR's PTS
	pub.WriteAudio(mkAF(100))
	pub.Write(mkAU(91, false))
	pub.WriteAudio(mkAF(105))

	both := mustReader(t, h, "live/a", "av")
	both.AttachAV()
	vo := mustReader(t, h, "live/a", "video")
	vo.Attach()
	pub.WriteAudio(mkAF(110))
	pub.Write(mkAU(92, false))
	wantFrames(t, "audio reader", drainFrames(t, both), "V90* A95* A100* V91* A105* A110 V92")
	wantFrames(t, "video-only reader", drainFrames(t, vo), "V90* V91* V92")

	// A new IDR starts a new cache.
	pub.WriteAudio(mkAF(130))
	pub.Write(mkAU(120, true))
	next := mustReader(t, h, "live/a", "next")
	next.AttachAV()
	wantFrames(t, "after the next IDR", drainFrames(t, next), "V120* A130*")
}

// The cache holds 5/3 as many audio as video frames; a GOP with more audio
// than that is not replayed: the reader starts with live sound and waits
// for the next IDR for its picture.
func TestGOPCacheAudioBound(t *testing.T) {
	h := New(Config{QueueSize: 16, GOPCacheFrames: 3}) // 5 audio frames
	pub := mustPublish(t, h, "live/a")
	pub.SetAudio(true)
	pub.Write(mkAU(0, true))
	for i := range 5 {
		pub.WriteAudio(mkAF(i))
	}
	fits := mustReader(t, h, "live/a", "fits")
	fits.AttachAV()
	wantFrames(t, "cache at its bound", drainFrames(t, fits), "V0* A0* A1* A2* A3* A4*")

	pub.WriteAudio(mkAF(5))
	over := mustReader(t, h, "live/a", "over")
	over.AttachAV()
	pub.WriteAudio(mkAF(6))
	pub.Write(mkAU(7, false))
	pub.Write(mkAU(8, true))
	got := drainFrames(t, over)
	wantFrames(t, "cache overflowed", got, "A6 V8")
	if slices.Contains(got, "V7") {
		t.Error("a P frame reached a reader that has no IDR yet")
	}
}

// The summary line keeps its text and adds the split by kind when audio
// was lost.
func TestDropSummaryNamesAudio(t *testing.T) {
	capture := &testkit.LogBuffer{}
	h := New(Config{QueueSize: 1, Logger: capture.Logger(slog.LevelInfo)}) // 1+1 slots
	pub := mustPublish(t, h, "live/a")
	pub.SetAudio(true)
	r := mustReader(t, h, "live/a", "s1")
	r.AttachAV()
	pub.Write(mkAU(0, true))
	pub.WriteAudio(mkAF(0))
	pub.Write(mkAU(1, false)) // dropped
	pub.WriteAudio(mkAF(1))   // dropped
	pub.Write(mkAU(2, false)) // dropped
	h.flushDrops()
	want := `level=WARN msg="reader is too slow, discarding 3 frames" path=live/a session=s1 video=2 audio=1` + "\n"
	if got := capture.String(); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
}
