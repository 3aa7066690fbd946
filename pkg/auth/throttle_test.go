package auth

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newTestThrottle(cfg ThrottleConfig) (*Throttle, *fakeClock) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	th := NewThrottle(cfg)
	th.now = c.now
	return th, c
}

// TestThrottleBounded: the penalty grows by doubling and never passes Max,
// however many failures; other keys are not affected.
func TestThrottleBounded(t *testing.T) {
	th, clock := newTestThrottle(ThrottleConfig{})
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		if got := th.Fail("a"); got != w*time.Millisecond {
			t.Errorf("failure %d: penalty %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
	for range 100 {
		if d := th.Fail("a"); d != time.Second {
			t.Fatalf("penalty %v after many failures, want the 1s bound", d)
		}
	}
	if r := th.Remaining("a"); r != time.Second {
		t.Errorf("Remaining = %v, want 1s", r)
	}
	if r := th.Remaining("b"); r != 0 {
		t.Errorf("another key is penalised: %v", r)
	}
	clock.add(1500 * time.Millisecond)
	if r := th.Remaining("a"); r != 0 {
		t.Errorf("penalty outlived itself: %v", r)
	}
	// After the forget interval the count starts over.
	clock.add(2 * time.Minute)
	if d := th.Fail("a"); d != 100*time.Millisecond {
		t.Errorf("after forgetting, penalty %v, want 100ms", d)
	}
	th.Succeed("a")
	if th.Remaining("a") != 0 || th.Len() != 0 {
		t.Error("Succeed did not clear the key")
	}
}

// TestThrottleMemoryBound: a flood from more addresses than MaxEntries
// keeps the map at MaxEntries, evicting forgotten keys first, then the
// stalest.
func TestThrottleMemoryBound(t *testing.T) {
	th, clock := newTestThrottle(ThrottleConfig{MaxEntries: 50})
	for i := range 1000 {
		th.Fail(fmt.Sprintf("10.0.%d.%d", i/256, i%256))
		clock.add(time.Millisecond)
		if th.Len() > 50 {
			t.Fatalf("%d keys after %d failures; the bound is 50", th.Len(), i+1)
		}
	}
	// The most recent key is still penalised; the first one was evicted.
	if th.Remaining("10.0.3.231") == 0 {
		t.Error("the newest key lost its penalty")
	}
	if th.Remaining("10.0.0.0") != 0 {
		t.Error("the stalest key was not evicted")
	}
}

func TestThrottleKey(t *testing.T) {
	a := Key(netip.MustParseAddr("2001:db8:1:2:aaaa::1"))
	b := Key(netip.MustParseAddr("2001:db8:1:2:bbbb::9"))
	if a != b {
		t.Errorf("addresses of one /64 have different keys: %s %s", a, b)
	}
	if k := Key(netip.MustParseAddr("::ffff:10.0.0.1")); k != "10.0.0.1" {
		t.Errorf("mapped IPv4 key = %s", k)
	}
}

// TestThrottleLock: LockAfter failures in a row lock a key for LockFor
// after the last one; fewer do not, a success clears them, and the lock
// ends on time.
func TestThrottleLock(t *testing.T) {
	th, clock := newTestThrottle(ThrottleConfig{LockAfter: 3, LockFor: time.Minute})
	th.Fail("a")
	th.Fail("a")
	if d := th.Locked("a"); d != 0 {
		t.Fatalf("locked after 2 of 3 failures: %v", d)
	}
	th.Fail("a")
	if d := th.Locked("a"); d != time.Minute {
		t.Fatalf("Locked = %v after 3 failures, want 1m", d)
	}
	clock.add(59 * time.Second)
	if d := th.Locked("a"); d != time.Second {
		t.Errorf("Locked = %v 59 s later, want 1s", d)
	}
	clock.add(time.Second)
	if d := th.Locked("a"); d != 0 {
		t.Errorf("still locked after LockFor: %v", d)
	}
	if d := th.Locked("b"); d != 0 {
		t.Errorf("another key is locked: %v", d)
	}
	th.Fail("c")
	th.Fail("c")
	th.Succeed("c")
	th.Fail("c")
	if d := th.Locked("c"); d != 0 {
		t.Errorf("a success did not clear the failures: locked %v", d)
	}
}

// TestThrottleFullTable fills the default 10,000-entry table and goes on
// failing from new addresses: the table stays at its bound, each new key
// evicts the stalest one, and a key that failed again recently survives
// the flood as long as it is not the stalest. The eviction is O(1) (the
// list's front); BenchmarkThrottleFull measures it.
func TestThrottleFullTable(t *testing.T) {
	th, clock := newTestThrottle(ThrottleConfig{Forget: time.Hour})
	const n = 10000
	key := func(i int) string { return fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255) }
	for i := range n {
		th.Fail(key(i))
		clock.add(time.Millisecond)
	}
	if th.Len() != n {
		t.Fatalf("%d keys after %d failures, want %d", th.Len(), n, n)
	}
	th.Fail(key(0)) // the stalest fails again: now the newest
	for i := n; i < 3*n/2; i++ {
		th.Fail(key(i))
		clock.add(time.Millisecond)
		if th.Len() != n {
			t.Fatalf("%d keys after %d failures, want the bound %d", th.Len(), i+1, n)
		}
	}
	has := func(k string) bool {
		th.mu.Lock()
		defer th.mu.Unlock()
		_, ok := th.m[k]
		return ok
	}
	if has(key(1)) || has(key(n/2)) {
		t.Error("the stalest keys were not evicted")
	}
	if !has(key(0)) {
		t.Error("a key that failed again was evicted before staler ones")
	}
	if !has(key(n/2+1)) || !has(key(3*n/2-1)) {
		t.Error("keys newer than the evicted ones were evicted")
	}
}

// BenchmarkThrottleFull is one failure from a new address into a full
// default table (on main before the list: a scan of all 10,000 entries).
func BenchmarkThrottleFull(b *testing.B) {
	th := NewThrottle(ThrottleConfig{})
	keys := make([]string, 1<<16)
	for i := range keys {
		keys[i] = fmt.Sprintf("10.0.%d.%d", i>>8, i&255)
	}
	for _, k := range keys[:10000] {
		th.Fail(k)
	}
	b.ResetTimer()
	for i := range b.N {
		th.Fail(keys[(10000+i)%len(keys)])
	}
}
