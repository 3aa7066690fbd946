package testkit

import (
	"testing"
	"time"
)

// pollEvery is short enough that a condition that became true is seen
// almost at once, and long enough that polling costs nothing measurable.
const pollEvery = 10 * time.Millisecond

// WaitFor polls cond until it holds, failing the test with what if it does
// not within timeout. Use it where no event announces the state change
// (counters, stats, another process's state); the timeout is a failure
// bound, never a pause.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
	}
}
