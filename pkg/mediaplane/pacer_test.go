package mediaplane

import (
	"slices"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// TestPacerWakesInDeadlineOrder gives the pacer jobs due in the past,
// soon, a little later and in an hour: the first three are queued in
// deadline order whenever the machine gets to it, the last one never
// within the test, and closing the pacer ends its goroutine (goleak).
func TestPacerWakesInDeadlineOrder(t *testing.T) {
	pool := &writerPool{pacer: newPacer()}
	pool.ready.L = &pool.mu
	pool.pacer.start()
	newJ := func() *job { return &job{pool: pool} }
	past, soon, later, never := newJ(), newJ(), newJ(), newJ()
	now := time.Now()
	pool.pacer.wakeAt(never, now.Add(time.Hour))
	pool.pacer.wakeAt(later, now.Add(40*time.Millisecond))
	pool.pacer.wakeAt(soon, now.Add(20*time.Millisecond))
	pool.pacer.wakeAt(past, now.Add(-time.Millisecond))
	queued := func() []*job {
		pool.mu.Lock()
		defer pool.mu.Unlock()
		return slices.Clone(pool.queue)
	}
	testkit.WaitFor(t, 10*time.Second, "three jobs woken", func() bool { return len(queued()) >= 3 })
	got := queued()
	if want := []*job{past, soon, later}; !slices.Equal(got, want) {
		t.Errorf("woken in the wrong order or too many: got %d jobs, want past, soon, later", len(got))
	}
	if st := never.sched.Load(); st != jobIdle {
		t.Errorf("the job due in an hour was woken (state %d)", st)
	}
	for _, j := range got {
		if st := j.sched.Load(); st != jobQueued {
			t.Errorf("a woken job is in state %d, want queued", st)
		}
	}
	pool.pacer.close()
}
