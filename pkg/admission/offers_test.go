package admission

import (
	"fmt"
	"testing"
	"time"
)

func TestOfferBucket(t *testing.T) {
	now := time.Unix(1000, 0)
	b := NewOfferBuckets(2, 3, 16)
	b.now = func() time.Time { return now }
	for i := range 3 {
		if ok, _ := b.Take("a"); !ok {
			t.Fatalf("offer %d of the burst refused", i+1)
		}
	}
	ok, wait := b.Take("a")
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("past the burst: ok=%v wait=%v, want refused, 500ms (2 a second)", ok, wait)
	}
	if got := RetryAfter(wait); got != 1 {
		t.Errorf("Retry-After for %v: %d, want 1", wait, got)
	}
	// Another client has its own bucket.
	if ok, _ := b.Take("b"); !ok {
		t.Fatal("b refused while a is over its rate")
	}
	now = now.Add(250 * time.Millisecond)
	if ok, wait := b.Take("a"); ok || wait != 250*time.Millisecond {
		t.Fatalf("half a token later: ok=%v wait=%v, want refused, 250ms", ok, wait)
	}
	now = now.Add(250 * time.Millisecond)
	if ok, _ := b.Take("a"); !ok {
		t.Fatal("a token later: refused")
	}
	// Quiet for long enough to refill: the bucket holds the burst, no more.
	now = now.Add(time.Hour)
	for i := range 3 {
		if ok, _ := b.Take("a"); !ok {
			t.Fatalf("after an hour, offer %d refused", i+1)
		}
	}
	if ok, _ := b.Take("a"); ok {
		t.Fatal("after an hour: more than the burst let through")
	}
	if got := RetryAfter(2500 * time.Millisecond); got != 3 {
		t.Errorf("Retry-After for 2.5 s: %d, want 3 (rounded up)", got)
	}
}

// The bucket table stays at its bound however many addresses post: a
// refilled bucket goes first, else the one seen longest ago, and expire
// empties the table once everyone is quiet.
func TestOfferBucketTableBound(t *testing.T) {
	now := time.Unix(1000, 0)
	const max = 8
	b := NewOfferBuckets(1, 2, max)
	b.now = func() time.Time { return now }
	for i := range 10 * max {
		now = now.Add(time.Millisecond)
		if ok, _ := b.Take(fmt.Sprint("10.0.0.", i)); !ok {
			t.Fatalf("first offer of address %d refused", i)
		}
		if n := b.Len(); n > max {
			t.Fatalf("after %d addresses the table holds %d, bound %d", i+1, n, max)
		}
	}
	// The newest address was not the one evicted: its bucket remembers.
	last := fmt.Sprint("10.0.0.", 10*max-1)
	b.Take(last)
	if ok, _ := b.Take(last); ok {
		t.Error("the newest address got a fresh bucket: it was evicted")
	}
	now = now.Add(3 * time.Second) // burst 2 at 1 a second: refilled
	b.Expire()
	if n := b.Len(); n != 0 {
		t.Errorf("after everyone went quiet the table holds %d", n)
	}
}

// A full table evicts the client seen longest ago, not the one added
// first: a client that keeps posting keeps its (emptied) bucket.
func TestOfferBucketEvictsLeastRecentlySeen(t *testing.T) {
	now := time.Unix(1000, 0)
	const max = 4
	b := NewOfferBuckets(1, 2, max)
	b.now = func() time.Time { return now }
	step := func(key string) bool {
		now = now.Add(time.Millisecond)
		ok, _ := b.Take(key)
		return ok
	}
	for i := range max {
		step(fmt.Sprint("c", i))
	}
	// c0 empties its bucket and is now the most recently seen.
	step("c0")
	if step("c0") {
		t.Fatal("c0 had more than its burst of 2")
	}
	step("new") // the table is full: c1 goes
	if n := b.Len(); n != max {
		t.Fatalf("table holds %d, want %d", n, max)
	}
	if step("c0") {
		t.Error("c0 got a fresh bucket: it was evicted although c1 was seen longer ago")
	}
	step("new2") // c2 goes next
	// c1 comes back with a fresh bucket of 2 (evicting c3).
	if !step("c1") || !step("c1") {
		t.Error("c1 was kept although it was seen longest ago")
	}
}

// A client's bucket grows with its live viewers: with L of them it holds
// burst+L and refills at rate×(1+L/burst); it shrinks again as they leave.
func TestOfferBucketGrowsWithLiveViewers(t *testing.T) {
	now := time.Unix(1000, 0)
	b := NewOfferBuckets(5, 20, 16)
	b.now = func() time.Time { return now }
	takes := func() int {
		n := 0
		for {
			ok, _ := b.Take("crowd")
			if !ok {
				return n
			}
			n++
		}
	}
	if n := takes(); n != 20 {
		t.Fatalf("a new client took %d, want the burst of 20", n)
	}
	for range 20 {
		b.Joined("crowd")
	}
	if b.Live("crowd") != 20 {
		t.Fatalf("live %d, want 20", b.Live("crowd"))
	}
	// Twice the rate: 10 a second, not the new room at once.
	now = now.Add(time.Second)
	if n := takes(); n != 10 {
		t.Fatalf("a second after 20 viewers joined: %d taken, want 10 (5 a second × (1+20/20))", n)
	}
	_, wait := b.Take("crowd")
	if wait != 100*time.Millisecond {
		t.Errorf("wait %v, want 100ms at 10 a second", wait)
	}
	// It still refills in burst/rate = 4 s, to burst+L = 40.
	now = now.Add(4 * time.Second)
	if n := takes(); n != 40 {
		t.Fatalf("refilled with 20 live viewers: %d taken, want 40", n)
	}
	// Another address gains nothing from the crowd's viewers.
	for range 20 {
		if ok, _ := b.Take("stranger"); !ok {
			t.Fatal("a stranger's burst refused")
		}
	}
	if ok, _ := b.Take("stranger"); ok {
		t.Fatal("a stranger got more than the burst")
	}
	// The viewers leave: back to the bucket of one client.
	for range 20 {
		b.Left("crowd")
	}
	now = now.Add(time.Hour)
	if n := takes(); n != 20 {
		t.Fatalf("after the viewers left: %d taken, want the burst of 20", n)
	}
	if b.Live("crowd") != 0 || len(b.live) != 0 {
		t.Errorf("after every viewer left: live %d, %d entries", b.Live("crowd"), len(b.live))
	}
}

// A client whose viewers connect and leave again and again gains nothing
// from them, and one whose offers never connect (the flood the bucket is
// for) stays at rate and burst: a flood of 10 a second from it gets 5.
func TestOfferBucketCyclingGainsNothing(t *testing.T) {
	now := time.Unix(1000, 0)
	b := NewOfferBuckets(5, 20, 16)
	b.now = func() time.Time { return now }
	got := 0
	for i := range 10 * 60 { // 10 offers a second for a minute
		now = now.Add(100 * time.Millisecond)
		if ok, _ := b.Take("cycler"); ok {
			got++
			if i%2 == 0 {
				// Its viewer connects and is gone before the next offer.
				b.Joined("cycler")
				b.Left("cycler")
			}
		}
	}
	if want := 20 + 5*60; got > want {
		t.Errorf("%d offers taken in a minute at 10 a second, want at most %d (burst + rate × 60 s)", got, want)
	}
	if b.Live("cycler") != 0 {
		t.Errorf("live %d after every viewer left", b.Live("cycler"))
	}
	// Left without a Joined (a bug elsewhere) never makes a bucket smaller
	// than a client's own.
	b.Left("nobody")
	if ok, _ := b.Take("nobody"); !ok || b.Live("nobody") != 0 {
		t.Error("an unmatched Left shrank a bucket")
	}
}
