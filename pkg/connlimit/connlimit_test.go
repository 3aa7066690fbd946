package connlimit

import (
	"testing"
	"time"
)

// A client at its cap is refused; the first refusal is due at once, the
// rest of the interval are counted into the next due one; the total cap
// has a count of its own; a released slot admits again.
func TestAdmitCapsAndSummaries(t *testing.T) {
	now := time.Unix(0, 0)
	tbl := New(2, 3, time.Second)
	tbl.Now = func() time.Time { return now }
	for range 2 {
		if ok, _ := tbl.Admit("a"); !ok {
			t.Fatal("a refused under its cap")
		}
	}
	ok, r := tbl.Admit("a")
	if ok || r.OverTotal || !r.Due || r.Refused != 1 || r.Open != 2 {
		t.Fatalf("a's first refusal: %v %+v, want refused, due, 1 of 2 open", ok, r)
	}
	for range 4 {
		if _, r := tbl.Admit("a"); r.Due {
			t.Fatalf("a refusal within the interval is due: %+v", r)
		}
	}
	if ok, _ := tbl.Admit("b"); !ok {
		t.Fatal("b refused: a's cap is a's")
	}
	ok, r = tbl.Admit("c")
	if ok || !r.OverTotal || !r.Due || r.Refused != 1 || r.Open != 3 {
		t.Fatalf("c over the total: %v %+v", ok, r)
	}
	tbl.Release("b")
	now = now.Add(time.Second)
	ok, r = tbl.Admit("a")
	if ok || r.OverTotal || !r.Due || r.Refused != 5 {
		t.Fatalf("a after the interval: %v %+v, want due with this one and four held", ok, r)
	}
	if tbl.Open() != 2 || tbl.ClientOpen("a") != 2 || tbl.Clients() != 1 {
		t.Errorf("open %d, a %d, clients %d", tbl.Open(), tbl.ClientOpen("a"), tbl.Clients())
	}
}
