// Package cpubudget is the one CPU budget the server's transcodes draw on.
// A transcode's cost does not depend on its viewers, only on what it
// decodes and encodes, and one 1080p60 transcode can take most of a
// 1 vCPU box: so every transcode (a path's `video: auto` transcoder
// today, a rendition of a path tomorrow) reserves its estimated cost here
// before it starts, and one that does not fit is refused instead of
// starving the viewers' fan-out.
//
// It is its own package, not part of pkg/vtranscode, because the budget
// is shared by whoever transcodes (several paths, and renditions that
// are not vtranscode's business), while the cost of one transcode is the
// transcoder's: the caller brings the estimate, the budget keeps the
// account.
//
// Estimates are corrected by measurement: a running transcode reports
// its measured share of a core (Reservation.Measured), which replaces
// the estimate it holds and teaches the budget, per kind of work, how
// far estimates of that kind are off, so the next one is closer.
package cpubudget

import (
	"errors"
	"fmt"
	"sync"
)

// Shares are fractions of one core: 1 is one core fully used.

// ErrRefused is what a refusal wraps.
var ErrRefused = errors.New("transcode CPU budget exhausted")

// RefusedError says why Reserve refused: what was asked, what is in use
// and the limit, all in shares of one core.
type RefusedError struct {
	Need, Used, Limit float64
	Holders           int // reservations holding Used
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("needs about %s of one core, and %s of the %s the transcode budget allows is in use by %d transcode(s)",
		Percent(e.Need), Percent(e.Used), Percent(e.Limit), e.Holders)
}

// Percent formats a share of one core as a percentage, with a decimal
// below 10 % where the rounding would hide it.
func Percent(share float64) string {
	if p := 100 * share; p < 10 {
		return fmt.Sprintf("%.1f%%", p)
	}
	return fmt.Sprintf("%.0f%%", 100*share)
}

func (e *RefusedError) Unwrap() error { return ErrRefused }

// correction bounds: a measurement that far off is an accident (a
// machine under other load, a still picture), not a better model.
const minFactor, maxFactor = 0.25, 4

// Budget is the account. Safe for concurrent use.
type Budget struct {
	mu      sync.Mutex
	limit   float64 // 0: no limit
	used    float64
	holders map[*Reservation]struct{}
	factor  map[string]float64 // by kind: measured / estimated, learned
	refused uint64
}

// New returns a budget of limit shares of one core (0: no limit; the
// reservations are still counted).
func New(limit float64) *Budget {
	return &Budget{limit: max(limit, 0), holders: map[*Reservation]struct{}{}, factor: map[string]float64{}}
}

// Reservation is one transcode's hold on the budget, from Reserve to
// Release.
type Reservation struct {
	b        *Budget
	kind     string
	estimate float64 // the caller's, before correction
	held     float64 // what it holds now (guarded by b.mu)
	measured bool
	released bool
}

// Estimate is the caller's estimate for kind corrected by what was
// measured of that kind so far.
func (b *Budget) Estimate(kind string, estimate float64) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.correctedLocked(kind, estimate)
}

func (b *Budget) correctedLocked(kind string, estimate float64) float64 {
	if f, ok := b.factor[kind]; ok {
		return estimate * f
	}
	return estimate
}

// Reserve holds the corrected estimate for one transcode of kind (a
// name for the work's model, e.g. "h264>h264": estimates of different
// kinds are corrected separately), or refuses with a *RefusedError when
// it does not fit beside what is held.
func (b *Budget) Reserve(kind string, estimate float64) (*Reservation, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	need := b.correctedLocked(kind, max(estimate, 0))
	if b.limit > 0 && b.used+need > b.limit {
		b.refused++
		return nil, &RefusedError{Need: need, Used: b.used, Limit: b.limit, Holders: len(b.holders)}
	}
	r := &Reservation{b: b, kind: kind, estimate: max(estimate, 0), held: need}
	b.used += need
	b.holders[r] = struct{}{}
	return r, nil
}

// Held is the share r holds: its estimate, or its last measurement.
func (r *Reservation) Held() float64 {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	return r.held
}

// Measured replaces what r holds by the share of a core the transcode
// was measured to use, and corrects later estimates of its kind. A
// measurement past the limit is held as it is (the transcode runs; the
// next one is refused): stopping a running stream for it would hurt its
// viewers more than the overrun does.
func (r *Reservation) Measured(share float64) {
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.released || share <= 0 {
		return
	}
	b.used += share - r.held
	r.held, r.measured = share, true
	if r.estimate > 0 {
		f := min(max(share/r.estimate, minFactor), maxFactor)
		if old, ok := b.factor[r.kind]; ok {
			// An average over the last few measurements: one transcode
			// of a noisy scene does not swing the next estimate.
			f = 0.75*old + 0.25*f
		}
		b.factor[r.kind] = f
	}
}

// Release gives r's share back; safe to call more than once.
func (r *Reservation) Release() {
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.released {
		return
	}
	r.released = true
	delete(b.holders, r)
	b.used -= r.held
	if len(b.holders) == 0 {
		b.used = 0 // no rounding residue survives the last release
	}
}

// Stats is a snapshot of the account, in shares of one core.
type Stats struct {
	Used, Limit float64
	Holders     int
	Refused     uint64 // reservations refused since New
}

// Stats returns the account.
func (b *Budget) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Stats{Used: b.used, Limit: b.limit, Holders: len(b.holders), Refused: b.refused}
}
