package hub

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// genFrame is one delivered video frame with its publisher generation.
type genFrame struct {
	seq int
	idr bool
	gen uint32
}

func drainGen(t *testing.T, r *Reader) []genFrame {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out []genFrame
	for {
		f, err := r.RecvFrame(ctx)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("RecvFrame: %v", err)
			}
			return out
		}
		if f.Video != nil {
			out = append(out, genFrame{int(f.Video.PTS), f.Video.IDR, f.Gen})
		}
	}
}

// TestTakeover: a second publisher with Override takes a busy path at once;
// the first one's writes go nowhere, its Replaced channel closes, and the
// reader continues with the new publisher from its first IDR.
func TestTakeover(t *testing.T) {
	h := New(Config{})
	first, err := h.PublishWith("live/a", "a", PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	r := mustReader(t, h, "live/a", "s1")
	r.Attach()
	first.Write(mkAU(0, true))
	first.Write(mkAU(1, false))

	if _, err := h.PublishWith("live/a", "b", PublishOptions{}); !errors.Is(err, ErrPathBusy) {
		t.Fatalf("second publisher without Override: err = %v, want ErrPathBusy", err)
	}
	second, err := h.PublishWith("live/a", "b", PublishOptions{Override: true})
	if err != nil {
		t.Fatalf("second publisher with Override: %v", err)
	}
	defer second.Close()
	select {
	case <-first.Replaced():
	default:
		t.Fatal("the replaced publisher's Replaced channel is open")
	}
	first.Write(mkAU(2, false)) // the old goroutine, still writing
	second.Write(mkAU(100, false))
	second.Write(mkAU(101, true))
	second.Write(mkAU(102, false))
	first.Close() // must leave the path to the new publisher
	second.Write(mkAU(103, false))

	want := []genFrame{{0, true, 0}, {1, false, 0}, {101, true, 1}, {102, false, 1}, {103, false, 1}}
	got := drainGen(t, r)
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if !h.HasPublisher("live/a") {
		t.Error("path lost its publisher when the replaced one closed")
	}
	if s := first.Stats(); s.FramesIn != 2 {
		t.Errorf("replaced publisher counts %d frames, want its own 2", s.FramesIn)
	}
	if s := second.Stats(); s.FramesIn != 4 || s.Readers != 1 {
		t.Errorf("new publisher: %d frames, %d readers; want 4 and 1", s.FramesIn, s.Readers)
	}
}

// TestGrace: readers outlive their publisher for the grace period, take
// the next publisher's stream from its first IDR, and end when a grace
// period passes with nobody publishing.
func TestGrace(t *testing.T) {
	h := New(Config{})
	opts := PublishOptions{Grace: time.Hour}
	first, err := h.PublishWith("live/a", "a", opts)
	if err != nil {
		t.Fatal(err)
	}
	r := mustReader(t, h, "live/a", "s1")
	r.AttachAV()
	first.Write(mkAU(0, true))
	first.Close()
	first.Write(mkAU(1, false)) // late, from the departed goroutine

	if h.HasPublisher("live/a") {
		t.Error("HasPublisher during the grace period")
	}
	if _, err := h.AddReader("live/a", "late"); !errors.Is(err, ErrNoPublisher) {
		t.Errorf("new reader during the grace period: err = %v, want ErrNoPublisher", err)
	}
	if ps := h.Paths(); len(ps) != 1 || ps[0].Publisher || ps[0].Readers != 1 {
		t.Errorf("Paths() during grace = %+v, want one held path with its reader", ps)
	}

	second, err := h.PublishWith("live/a", "b", PublishOptions{Grace: 20 * time.Millisecond})
	if err != nil {
		t.Fatalf("publisher within the grace period: %v", err)
	}
	second.Write(mkAU(50, false)) // joined mid-GOP: readers wait for the IDR
	second.Write(mkAU(51, true))
	second.WriteAudio(&av.AudioFrame{PTS: 51})
	got := drainGen(t, r)
	if len(got) != 2 || got[1].seq != 51 || !got[1].idr || got[1].gen == got[0].gen {
		t.Fatalf("reader got %v, want frame 0 then IDR 51 of a new generation", got)
	}

	second.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for {
		_, err := r.RecvFrame(ctx)
		if errors.Is(err, ErrEnded) {
			break
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("reader after the grace period: %v, want ErrEnded", err)
		}
		if ctx.Err() != nil {
			t.Fatal("reader not ended after the grace period")
		}
	}
	if n := h.ReadersTotal(); n != 0 || len(h.Paths()) != 0 {
		t.Errorf("after the grace period: %d readers, paths %v", n, h.Paths())
	}
}

// TestGraceWithoutReaders: a path nobody watches ends at once, so the next
// publisher starts a fresh one.
func TestGraceWithoutReaders(t *testing.T) {
	h := New(Config{})
	pub, err := h.PublishWith("live/a", "a", PublishOptions{Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	pub.Close()
	if len(h.Paths()) != 0 {
		t.Errorf("an unwatched path is held: %v", h.Paths())
	}
}
