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

// Extra raises one client's cap and no one else's; the total still holds.
func TestExtraRaisesOneClientsCap(t *testing.T) {
	tbl := New(2, 6, time.Second)
	extra := map[string]int{"crowd": 3}
	tbl.Extra = func(key string) int { return extra[key] }
	for i := range 5 {
		if ok, _ := tbl.Admit("crowd"); !ok {
			t.Fatalf("crowd's connection %d refused under its cap of 2+3", i+1)
		}
	}
	if ok, _ := tbl.Admit("crowd"); ok {
		t.Fatal("crowd got a 6th connection past 2+3")
	}
	if ok, _ := tbl.Admit("b"); !ok {
		t.Fatal("b refused under its own cap")
	}
	if ok, r := tbl.Admit("b"); ok || !r.OverTotal {
		t.Fatalf("a 7th connection past the total of 6: %v %+v", ok, r)
	}
	// The crowd's viewers left: its next connection meets the plain cap.
	extra["crowd"] = 0
	tbl.Release("b")
	if ok, r := tbl.Admit("crowd"); ok || r.OverTotal {
		t.Fatalf("crowd with 5 open and no extra: %v %+v, want refused at its own cap", ok, r)
	}
}
