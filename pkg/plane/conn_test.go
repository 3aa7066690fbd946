package plane

import (
	"testing"
	"time"
)

// scriptStepper answers each Step from a script and reports every call.
type scriptStepper struct {
	wake   func()
	script []func() (time.Time, bool)
	steps  chan int
	n      int
}

func (s *scriptStepper) SetWake(wake func()) { s.wake = wake }

func (s *scriptStepper) Step(time.Time) (time.Time, bool) {
	at, done := s.script[s.n]()
	s.n++
	s.steps <- s.n
	return at, done
}

// TestRun: Run steps at once, again at once for a time already passed,
// at the time asked for, then only when woken, and returns when done.
func TestRun(t *testing.T) {
	s := &scriptStepper{steps: make(chan int, 8)}
	s.script = []func() (time.Time, bool){
		func() (time.Time, bool) { return time.Now().Add(-time.Second), false }, // at once
		func() (time.Time, bool) { return time.Now().Add(20 * time.Millisecond), false },
		func() (time.Time, bool) { return time.Time{}, false }, // a wake only
		func() (time.Time, bool) { return time.Time{}, true },
	}
	done := make(chan struct{})
	go func() {
		Run(s)
		close(done)
	}()
	for want := 1; want <= 3; want++ {
		if n := <-s.steps; n != want {
			t.Fatalf("step %d, want %d", n, want)
		}
	}
	select {
	case n := <-s.steps:
		t.Fatalf("step %d without a wake", n)
	default:
	}
	s.wake()
	if n := <-s.steps; n != 4 {
		t.Fatalf("step %d, want 4", n)
	}
	<-done
}
