package hub

import (
	"testing"
	"time"
)

// TestState follows one path through what an edge's pull sees: nothing,
// a publisher without a picture, a playable stream, a reader, the
// publisher leaving within its grace (reader kept, not playable), the
// next publisher's first IDR, and the end.
func TestState(t *testing.T) {
	h := New(Config{})
	want := func(step string, w PathState) {
		t.Helper()
		if got := h.State("live/a"); got != w {
			t.Fatalf("%s: State = %+v, want %+v", step, got, w)
		}
	}
	want("unknown path", PathState{})
	pub, err := h.PublishWith("live/a", "o:1", PublishOptions{Grace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want("publisher, no frame", PathState{Publisher: true})
	pub.Write(mkAU(1, false))
	want("a P frame only", PathState{Publisher: true})
	pub.Write(mkAU(2, true))
	want("after the first IDR", PathState{Publisher: true, Playable: true})
	r := mustReader(t, h, "live/a", "s1")
	r.Attach()
	want("with a reader", PathState{Publisher: true, Playable: true, Readers: 1})

	pub.Close()
	want("in the grace period", PathState{Readers: 1})
	next, err := h.PublishWith("live/a", "o:2", PublishOptions{Grace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want("next publisher before its IDR", PathState{Publisher: true, Readers: 1})
	next.Write(mkAU(3, true))
	want("next publisher's IDR", PathState{Publisher: true, Playable: true, Readers: 1})

	r.Close()
	next.Close()
	want("ended", PathState{})
}
