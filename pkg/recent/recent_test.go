package recent

import (
	"testing"
	"time"
)

// TestSet: a key is remembered for the window with its own value, and
// the set never holds more than its bound, however many keys are added:
// pushing past it forgets the oldest first.
func TestSet(t *testing.T) {
	now := time.Unix(1000, 0)
	e := New(time.Minute, 3)
	e.Now = func() time.Time { return now }
	e.Add("a", "live/cam1")
	if !e.Has("a", "live/cam1") || e.Has("a", "live/other") || e.Has("b", "live/cam1") {
		t.Fatal("lookup wrong right after add")
	}
	now = now.Add(59 * time.Second)
	if !e.Has("a", "live/cam1") {
		t.Error("forgotten within the window")
	}
	now = now.Add(time.Second)
	if e.Has("a", "live/cam1") {
		t.Error("remembered past the window")
	}
	for i := range 10 {
		e.Add(string(rune('b'+i)), "p")
		if n := e.Len(); n > 3 {
			t.Fatalf("%d entries after %d adds, bound 3", n, i+1)
		}
	}
	for key, want := range map[string]bool{"b": false, "h": false, "i": true, "j": true, "k": true} {
		if got := e.Has(key, "p"); got != want {
			t.Errorf("Has(%q) = %v, want %v (the oldest go first)", key, got, want)
		}
	}
	e.Add("k", "p") // again: no duplicate
	if n := e.Len(); n != 3 {
		t.Errorf("%d entries after re-adding, want 3", n)
	}
}
