package edge

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// TestRandomPathsRefused: demands for many random names the source does
// not have cost one dial each, a second demand within 10 s is answered
// from memory, and the log has one line for all of them.
func TestRandomPathsRefused(t *testing.T) {
	r := newMemRig(t, source(), func(int) (link, error) { return nil, refused(1404) }, nil)
	r.p.rlog.every = time.Hour // one line per reason for the whole test
	const names = 50
	for round := range 2 {
		for i := range names {
			err := r.p.Demand(t.Context(), fmt.Sprintf("live/random%d", i))
			if !errors.Is(err, hub.ErrNoPublisher) {
				t.Fatalf("round %d, name %d: Demand = %v, want the source's refusal", round, i, err)
			}
		}
	}
	dials, sleeps, _ := r.record()
	t.Logf("%d demands for %d random names: %d dials, %d back-offs, %d names remembered", 2*names, names, len(dials), len(sleeps), r.p.refused.len())
	if len(dials) != names || len(sleeps) != 0 {
		t.Errorf("%d dials and %d back-offs for %d names asked twice, want one dial each and no redial", len(dials), len(sleeps), names)
	}
	if n := len(r.logs.Lines("source has no such stream")); n != 1 {
		t.Errorf("%d log lines for %d refusals of one reason, want 1:\n%s", n, names, r.logs.String())
	}
}

// TestRefusedCacheBounded pushes past the remembered names' bound.
func TestRefusedCacheBounded(t *testing.T) {
	var c refusedCache
	now := time.Now()
	for i := range refusedMax + 100 {
		c.add(fmt.Sprintf("live/p%d", i), &Error{}, now.Add(time.Duration(i)*time.Microsecond))
	}
	if c.len() != refusedMax {
		t.Fatalf("%d names remembered, want the bound %d", c.len(), refusedMax)
	}
	if c.get("live/p0", now) != nil || c.get(fmt.Sprintf("live/p%d", refusedMax+99), now) == nil {
		t.Error("the oldest name should have gone, the newest stayed")
	}
	if c.get(fmt.Sprintf("live/p%d", refusedMax+99), now.Add(refusedFor+time.Second)) != nil {
		t.Error("a refusal is remembered past refusedFor")
	}
}

// TestMaxPulls: past the limit a demand is refused as load (503) without
// a dial, and the log says so once; a pull ending makes room.
func TestMaxPulls(t *testing.T) {
	aus := clipAUs(t)
	var r *memRig
	r = newMemRig(t, source(), func(n int) (link, error) {
		return newMemLink(r.hub, fmt.Sprintf("live/p%d", n), aus), nil
	}, nil)
	r.p.cfg.MaxPulls = 2
	r.p.rlog.every = time.Hour
	for i := range 2 {
		if err := r.p.Demand(t.Context(), fmt.Sprintf("live/p%d", i)); err != nil {
			t.Fatalf("demand %d: %v", i, err)
		}
	}
	for range 3 {
		err := r.p.Demand(t.Context(), "live/p2")
		var tm *TooManyPullsError
		var unavailable interface{ Unavailable() bool }
		if !errors.As(err, &tm) || !errors.As(err, &unavailable) || !unavailable.Unavailable() || tm.Limit != 2 {
			t.Fatalf("third pull: Demand = %v, want TooManyPullsError at limit 2", err)
		}
	}
	dials, _, _ := r.record()
	if len(dials) != 2 {
		t.Errorf("%d dials, want 2: nothing past the limit", len(dials))
	}
	if n := len(r.logs.Lines("edge pull refused: too many pulls")); n != 1 {
		t.Errorf("%d lines for three refusals, want 1", n)
	}
	// The pulls linger out (no readers), which frees the slots.
	testkit.WaitFor(t, 10*time.Second, "the pulls to linger out", func() bool {
		r.p.mu.Lock()
		defer r.p.mu.Unlock()
		return len(r.p.pulls) == 0
	})
	if err := r.p.Demand(t.Context(), "live/p2"); err != nil {
		t.Errorf("a demand after the pulls ended: %v", err)
	}
}
