package hub

import (
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// TestState follows one path through what an edge's pull sees: nothing,
// a publisher without a picture, a playable stream, a reader, the
// publisher leaving within its grace (reader kept, not playable), the
// next publisher's first IDR, and the end. LastFrame is the current
// publisher's: zero until it writes, and again after a handover.
func TestState(t *testing.T) {
	h := New(Config{})
	var wrote time.Time
	want := func(step string, w PathState) {
		t.Helper()
		got := h.State("live/a")
		last := got.LastFrame
		got.LastFrame = time.Time{}
		if got != w {
			t.Fatalf("%s: State = %+v, want %+v", step, got, w)
		}
		if framed := w.Publisher && !wrote.IsZero(); framed != !last.IsZero() || framed && last.Before(wrote) {
			t.Fatalf("%s: LastFrame %v, want %v", step, last, map[bool]string{true: "at or after the last Write", false: "zero"}[framed])
		}
	}
	write := func(pub *Publisher, au *av.AccessUnit) {
		wrote = time.Now()
		pub.Write(au)
	}
	want("unknown path", PathState{})
	pub, err := h.PublishWith("live/a", "o:1", PublishOptions{Grace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want("publisher, no frame", PathState{Publisher: true})
	write(pub, mkAU(1, false))
	want("a P frame only", PathState{Publisher: true})
	write(pub, mkAU(2, true))
	want("after the first IDR", PathState{Publisher: true, Playable: true})
	r := mustReader(t, h, "live/a", "s1")
	r.Attach()
	want("with a reader", PathState{Publisher: true, Playable: true, Readers: 1})

	pub.Close()
	wrote = time.Time{}
	want("in the grace period", PathState{Readers: 1})
	next, err := h.PublishWith("live/a", "o:2", PublishOptions{Grace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want("next publisher before its IDR", PathState{Publisher: true, Readers: 1})
	write(next, mkAU(3, true))
	want("next publisher's IDR", PathState{Publisher: true, Playable: true, Readers: 1})

	r.Close()
	next.Close()
	want("ended", PathState{})
}
