package hub

import (
	"log/slog"
	"strconv"
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// SkipToIDR drops the reader's video from the next frame to the next IDR,
// as a full queue does: counted, logged with the same line, audio kept,
// sequence resumed at the IDR. Only the asking reader loses anything, and
// the drops are told apart from a full queue's in the stats.
func TestSkipToIDR(t *testing.T) {
	capture := &testkit.LogBuffer{}
	h := New(Config{QueueSize: 16, Logger: capture.Logger(slog.LevelInfo)})
	pub := mustPublish(t, h, "live/a")
	pub.SetAudio(true)
	narrow := mustReader(t, h, "live/a", "s1")
	other := mustReader(t, h, "live/a", "s2")
	narrow.AttachAV()
	other.AttachAV()

	pub.Write(mkAU(0, true))
	pub.Write(mkAU(1, false))
	narrow.SkipToIDR()
	narrow.SkipToIDR() // one request, however often asked
	pub.Write(mkAU(2, false))
	pub.WriteAudio(mkAF(2))
	pub.Write(mkAU(3, false))
	pub.Write(mkAU(4, true))
	pub.Write(mkAU(5, false))
	pub.Write(mkAU(6, false))

	wantFrames(t, "narrow reader", drainFrames(t, narrow), "V0 V1 A2 V4 V5 V6")
	wantFrames(t, "other reader", drainFrames(t, other), "V0 V1 V2 A2 V3 V4 V5 V6")
	if narrow.Dropped() != 2 || other.Dropped() != 0 {
		t.Errorf("Dropped: narrow %d, other %d; want 2, 0", narrow.Dropped(), other.Dropped())
	}
	st := pub.Stats()
	if st.VideoFramesDropped != 2 || st.CongestedFramesDropped != 2 || st.FramesDropped != 2 {
		t.Errorf("Stats drops video %d congested %d total %d, want 2, 2, 2",
			st.VideoFramesDropped, st.CongestedFramesDropped, st.FramesDropped)
	}
	h.flushDrops()
	want := `level=WARN msg="reader is too slow, discarding 2 frames" path=live/a session=s1` + "\n"
	if got := capture.String(); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
}

// A request has nothing to drop when the next frame is an IDR, and a reader
// that is not receiving yet, or already dropping for a full queue, is left
// as it is: the drops stay a full queue's.
func TestSkipToIDRWithNothingToDrop(t *testing.T) {
	t.Run("next frame is an IDR", func(t *testing.T) {
		h := New(Config{QueueSize: 16})
		pub := mustPublish(t, h, "live/a")
		r := mustReader(t, h, "live/a", "s1")
		r.Attach()
		pub.Write(mkAU(0, true))
		r.SkipToIDR()
		pub.Write(mkAU(1, true))
		pub.Write(mkAU(2, false)) // the request did not outlive the IDR
		wantFrames(t, "frames", gotFrames(drain(t, r)), "V0 V1 V2")
		if r.Dropped() != 0 {
			t.Errorf("Dropped() = %d, want 0", r.Dropped())
		}
	})
	t.Run("waiting for the first IDR", func(t *testing.T) {
		h := New(Config{QueueSize: 16})
		pub := mustPublish(t, h, "live/a")
		r := mustReader(t, h, "live/a", "s1")
		r.Attach() // no cache yet
		r.SkipToIDR()
		pub.Write(mkAU(0, false))
		pub.Write(mkAU(1, true))
		pub.Write(mkAU(2, false))
		wantFrames(t, "frames", gotFrames(drain(t, r)), "V1 V2")
		if st := pub.Stats(); r.Dropped() != 0 || st.CongestedFramesDropped != 0 {
			t.Errorf("Dropped() = %d, congested %d; want 0, 0", r.Dropped(), st.CongestedFramesDropped)
		}
	})
	t.Run("already dropping", func(t *testing.T) {
		h := New(Config{QueueSize: 2})
		pub := mustPublish(t, h, "live/a")
		r := mustReader(t, h, "live/a", "s1")
		r.Attach()
		pub.Write(mkAU(0, true))
		pub.Write(mkAU(1, false))
		pub.Write(mkAU(2, false)) // full
		r.SkipToIDR()
		pub.Write(mkAU(3, false))
		wantFrames(t, "before the IDR", gotFrames(drain(t, r)), "V0 V1")
		pub.Write(mkAU(4, true))
		wantFrames(t, "after it", gotFrames(drain(t, r)), "V4")
		if st := pub.Stats(); st.VideoFramesDropped != 2 || st.CongestedFramesDropped != 0 {
			t.Errorf("video drops %d, congested %d; want 2 (a full queue's), 0", st.VideoFramesDropped, st.CongestedFramesDropped)
		}
	})
}

func gotFrames(seqs []got) []string {
	out := make([]string, len(seqs))
	for i, g := range seqs {
		out[i] = "V" + strconv.Itoa(g.seq)
	}
	return out
}
