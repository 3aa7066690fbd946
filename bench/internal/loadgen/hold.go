package loadgen

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/procfs"
)

// Fill grows the pool to target sessions at rate per second, waits until
// each receives media, then waits settle more: the server sends a new
// viewer its cached GOP in a burst, and a window that began during the
// burst would overstate the frame rate. It returns how many sessions
// failed to connect, and false when ctx ended first.
func (p *Pool) Fill(ctx context.Context, target int, rate float64, settle time.Duration) (failed int, ok bool) {
	_, failed = p.Grow(ctx, target, rate)
	p.WaitFlowing(ctx, 10*time.Second)
	return failed, waitCtx(ctx, settle)
}

func waitCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Hold is one measured window over a pool: every session's counters at
// both ends, and what the generator itself spent in between, so that a
// result always comes with the instrument's own cost.
type Hold struct {
	Start, End    time.Time
	Sessions      []*Session // the sessions of the window; ones opened later are not in it
	Before, After []Snapshot
	GenCPU        float64 // this process, % of one core; 0 when /proc could not be read

	gen0   time.Duration
	gen0OK bool
}

// StartHold opens a window over the sessions held now.
func (p *Pool) StartHold() *Hold {
	h := &Hold{Sessions: p.Sessions()}
	gen0, err := SelfCPU()
	h.gen0, h.gen0OK = gen0, err == nil
	h.Start = time.Now()
	h.Before = snapshotAll(h.Sessions)
	return h
}

// Finish closes the window.
func (h *Hold) Finish() {
	h.End = time.Now()
	h.After = snapshotAll(h.Sessions)
	if gen1, err := SelfCPU(); err == nil && h.gen0OK {
		h.GenCPU = CPUPercent(gen1-h.gen0, h.Duration())
	}
}

// Duration is the window's wall time.
func (h *Hold) Duration() time.Duration { return h.End.Sub(h.Start) }

// Windows judges every session of the window.
func (h *Hold) Windows(c Criteria) []Window {
	out := make([]Window, len(h.Sessions))
	for i, s := range h.Sessions {
		out[i] = Evaluate(h.Before[i], h.After[i], s.Decode, c)
	}
	return out
}

// Feedback sums what a window's viewers sent back and the stalls they saw.
type Feedback struct {
	Stalls uint64 // every session's
	// Sessions that send their own receiver reports (browser mode).
	Sessions                 int
	ReportsPerViewerSecond   float64
	NACKed, PLIs, RTCPUnsent uint64
}

// SumFeedback adds up the window's feedback and stalls.
func SumFeedback(h *Hold, c Criteria) Feedback {
	var f Feedback
	var reports uint64
	for i, w := range h.Windows(c) {
		f.Stalls += w.Stalls
		if !h.Sessions[i].feedback {
			continue
		}
		f.Sessions++
		reports += w.ReportsSent
		f.NACKed += w.NACKedSent
		f.PLIs += w.PLIsSent
		f.RTCPUnsent += w.RTCPUnsent
	}
	if f.Sessions > 0 && h.Duration() > 0 {
		f.ReportsPerViewerSecond = float64(reports) / float64(f.Sessions) / h.Duration().Seconds()
	}
	return f
}

func snapshotAll(ss []*Session) []Snapshot {
	out := make([]Snapshot, len(ss))
	for i, s := range ss {
		out[i] = s.Snapshot()
	}
	return out
}

// SelfCPU is this process's user+system CPU time so far.
func SelfCPU() (time.Duration, error) {
	self, err := procfs.Self()
	if err != nil {
		return 0, fmt.Errorf("loadgen: own CPU time: %w", err)
	}
	st, err := self.Stat()
	if err != nil {
		return 0, fmt.Errorf("loadgen: own CPU time: %w", err)
	}
	return time.Duration(st.CPUTime() * float64(time.Second)), nil
}

// CPUPercent is CPU time used over wall time, in % of one core.
func CPUPercent(cpu, wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return 100 * cpu.Seconds() / wall.Seconds()
}
