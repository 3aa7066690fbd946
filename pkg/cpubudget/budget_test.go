package cpubudget

import (
	"errors"
	"math"
	"sync"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// What fits is held, what does not is refused with the figures, and a
// release makes room again.
func TestReserveFitsRefusesReleases(t *testing.T) {
	b := New(0.5)
	r1, err := b.Reserve("k", 0.3)
	if err != nil {
		t.Fatalf("0.3 of 0.5: %v", err)
	}
	_, err = b.Reserve("k", 0.3)
	var re *RefusedError
	if !errors.As(err, &re) || !errors.Is(err, ErrRefused) {
		t.Fatalf("0.3 more past 0.5: err %v, want a *RefusedError", err)
	}
	if !near(re.Need, 0.3) || !near(re.Used, 0.3) || !near(re.Limit, 0.5) || re.Holders != 1 {
		t.Errorf("refusal %+v", re)
	}
	t.Logf("refusal: %v", err)
	r2, err := b.Reserve("k", 0.2) // exactly fills it
	if err != nil {
		t.Fatalf("0.2 beside 0.3 of 0.5: %v", err)
	}
	if st := b.Stats(); !near(st.Used, 0.5) || st.Holders != 2 || st.Refused != 1 {
		t.Errorf("stats %+v", st)
	}
	r1.Release()
	r1.Release() // twice: once counted
	if st := b.Stats(); !near(st.Used, 0.2) || st.Holders != 1 {
		t.Errorf("after one release: %+v", st)
	}
	if _, err := b.Reserve("k", 0.3); err != nil {
		t.Errorf("0.3 after the release: %v", err)
	}
	r2.Release()
}

// A measurement replaces the estimate held, and later estimates of the
// same kind (only) are corrected by it.
func TestMeasuredCorrects(t *testing.T) {
	b := New(1)
	r, err := b.Reserve("dec", 0.2)
	if err != nil {
		t.Fatal(err)
	}
	r.Measured(0.4)
	if st := b.Stats(); !near(st.Used, 0.4) || !near(r.Held(), 0.4) {
		t.Errorf("after measuring 0.4: used %v held %v", st.Used, r.Held())
	}
	if e := b.Estimate("dec", 0.1); !near(e, 0.2) {
		t.Errorf("next estimate of 0.1 corrected to %v, want 0.2 (measured twice the estimate)", e)
	}
	if e := b.Estimate("other", 0.1); !near(e, 0.1) {
		t.Errorf("another kind's estimate corrected to %v", e)
	}
	// Corrected estimates are what a reservation needs: 0.4 + 2×0.35 > 1.
	if _, err := b.Reserve("dec", 0.35); err == nil {
		t.Error("a corrected 0.7 beside 0.4 of 1 was not refused")
	}
	r.Release()
	r.Measured(0.9) // after release: no effect
	if st := b.Stats(); st.Used != 0 || st.Holders != 0 {
		t.Errorf("after release: %+v", st)
	}
	// An absurd measurement is clamped, not learned as it is.
	r, _ = b.Reserve("x", 0.1)
	r.Measured(100)
	if e := b.Estimate("x", 0.1); !near(e, 0.1*maxFactor) {
		t.Errorf("correction %v, want clamped to %v", e, 0.1*maxFactor)
	}
	r.Release()
}

// No limit: everything fits and is counted.
func TestNoLimit(t *testing.T) {
	b := New(0)
	r, err := b.Reserve("k", 5)
	if err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); !near(st.Used, 5) || st.Holders != 1 {
		t.Errorf("%+v", st)
	}
	r.Release()
}

// Concurrent reservers never hold more than the limit together, and
// every release returns what was held.
func TestConcurrent(t *testing.T) {
	b := New(1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	peak := 0.0
	var granted, refused int
	for range 16 {
		wg.Go(func() {
			for range 200 {
				r, err := b.Reserve("k", 0.3)
				if err != nil {
					mu.Lock()
					refused++
					mu.Unlock()
					continue
				}
				r.Measured(0.25)
				st := b.Stats()
				mu.Lock()
				granted++
				peak = max(peak, st.Used)
				mu.Unlock()
				r.Release()
			}
		})
	}
	wg.Wait()
	st := b.Stats()
	t.Logf("%d granted, %d refused, peak %.2f of 1", granted, refused, peak)
	if st.Used != 0 || st.Holders != 0 {
		t.Errorf("after every release: %+v", st)
	}
	if peak > 1+1e-9 || granted == 0 || st.Refused != uint64(refused) {
		t.Errorf("peak %v (limit 1), %d granted, %d refused, stats %+v", peak, granted, refused, st)
	}
}
