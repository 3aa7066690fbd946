package admission

import "testing"

func TestSlots(t *testing.T) {
	h := NewSlots(3, 2)
	steps := []struct {
		key  string
		want SlotRefusal
	}{
		{"a", SlotTaken},
		{"a", SlotTaken},
		{"a", ClientSlotsFull},
		{"b", SlotTaken},
		{"c", SlotsFull},
	}
	for i, s := range steps {
		if got := h.Acquire(s.key); got != s.want {
			t.Fatalf("step %d Acquire(%q) = %d, want %d", i, s.key, got, s.want)
		}
	}
	h.Release("a")
	if got := h.Acquire("c"); got != SlotTaken {
		t.Fatalf("after a release: Acquire(c) = %d", got)
	}
	for _, k := range []string{"a", "b", "c"} {
		h.Release(k)
	}
	// A client without a slot leaves no entry behind, so the table never
	// outgrows the total cap.
	if h.InFlight() != 0 || h.clients() != 0 {
		t.Fatalf("after releasing all: %d in flight, %d clients", h.InFlight(), h.clients())
	}
}
