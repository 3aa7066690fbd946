package hub

import "testing"

// A reader attached after DropCache gets none of the GOP written before
// it and starts at the next IDR; one attached before is not affected.
func TestDropCache(t *testing.T) {
	h := New(Config{})
	pub := mustPublish(t, h, "live/a")
	before := mustReader(t, h, "live/a", "before")
	before.Attach()
	for i := range 5 {
		pub.Write(mkAU(i, i == 0))
	}
	pub.DropCache()
	after := mustReader(t, h, "live/a", "after")
	after.Attach()
	if got := drain(t, after); len(got) != 0 {
		t.Fatalf("after DropCache a new reader got %v, want nothing until the next IDR", got)
	}
	pub.Write(mkAU(5, false))
	pub.Write(mkAU(6, true))
	pub.Write(mkAU(7, false))
	if got := drain(t, after); len(got) != 2 || got[0].seq != 6 || !got[0].idr || got[0].catchUp {
		t.Errorf("new reader got %v, want the live IDR 6 and 7", got)
	}
	if got := drain(t, before); len(got) != 8 {
		t.Errorf("reader attached before got %d frames, want all 8", len(got))
	}
}
