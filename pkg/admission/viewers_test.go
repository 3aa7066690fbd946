package admission

import (
	"testing"
	"time"
)

func TestViewerLimitsDefaults(t *testing.T) {
	got := ViewerLimits{OfferRate: -1}.WithDefaults(10 * time.Second)
	want := ViewerLimits{MaxHandshakes: DefaultMaxHandshakes, MaxHandshakesPerClient: DefaultMaxHandshakesPerClient,
		ICEStartTimeout: DefaultICEStartTimeout, OfferRate: DefaultOfferRate, OfferBurst: DefaultOfferBurst,
		MaxPendingOffers: DefaultMaxPendingOffers}
	if got != want {
		t.Errorf("defaults: got %+v, want %+v", got, want)
	}
	// A client's share never exceeds the total, and ICE never gets longer
	// to start than the whole handshake.
	got = ViewerLimits{MaxHandshakes: 4, MaxHandshakesPerClient: 9, ICEStartTimeout: time.Minute}.WithDefaults(3 * time.Second)
	if got.MaxHandshakesPerClient != 4 || got.ICEStartTimeout != 3*time.Second {
		t.Errorf("clamped: got %d per client, ICE start %v; want 4, 3s", got.MaxHandshakesPerClient, got.ICEStartTimeout)
	}
}

func TestNewViewers(t *testing.T) {
	v := NewViewers(ViewerLimits{MaxHandshakes: 8, MaxHandshakesPerClient: 3, MaxPendingOffers: 2, OfferRate: 1, OfferBurst: 1}.WithDefaults(time.Second))
	if v.Handshakes.PerClient() != 3 {
		t.Errorf("handshakes per client %d, want 3", v.Handshakes.PerClient())
	}
	// The pending table's per-client cap is the handshake one, but never
	// more than its own total.
	if v.Pending.PerClient() != 2 {
		t.Errorf("pending per client %d, want 2 (the pending total)", v.Pending.PerClient())
	}
	if ok, _ := v.Offers.Take("a"); !ok {
		t.Fatal("first offer refused")
	}
	if ok, _ := v.Offers.Take("a"); ok {
		t.Fatal("second offer within the burst of 1 taken")
	}
}

// TestOfferHolds: an answered offer holds an Unproven and a Pending slot,
// trades the Pending one for a Handshakes slot as ICE starts or is
// refused one (holding only Unproven then), and Release gives back
// whatever it holds, so the tables return to empty.
func TestOfferHolds(t *testing.T) {
	v := NewViewers(ViewerLimits{MaxHandshakes: 1, MaxHandshakesPerClient: 1, MaxPendingOffers: 2}.WithDefaults(time.Second))
	inFlight := func() [3]int { return [3]int{v.Unproven.InFlight(), v.Pending.InFlight(), v.Handshakes.InFlight()} }
	a, err := v.TakeOffer("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := v.TakeOffer("b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.TakeOffer("c"); err == nil {
		t.Fatal("a third offer past 2 pending taken")
	}
	if got := inFlight(); got != [3]int{2, 2, 0} {
		t.Errorf("two offers hold %v, want [2 2 0] (unproven, pending, handshakes)", got)
	}
	if err := a.StartHandshake(); err != nil {
		t.Fatal(err)
	}
	if err := b.StartHandshake(); err != ErrNoHandshakeSlot {
		t.Fatalf("second handshake past 1: %v, want ErrNoHandshakeSlot", err)
	}
	if got := inFlight(); got != [3]int{2, 0, 1} {
		t.Errorf("after ICE started hold %v, want [2 0 1]", got)
	}
	a.Release()
	b.Release()
	if got := inFlight(); got != [3]int{0, 0, 0} {
		t.Errorf("released, hold %v, want none", got)
	}
}
