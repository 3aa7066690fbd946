package lograte

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type line struct {
	kind   string
	held   int
	latest string
}

// clocked is a Limiter on a clock the test steps, recording its summaries.
type clocked struct {
	*Limiter[string, string]
	now   time.Time
	lines []line
}

func newClocked(every time.Duration, maxKinds int) *clocked {
	c := &clocked{now: time.Unix(1000, 0)}
	c.Limiter = New(every, maxKinds, func(kind string, held int, latest string) {
		c.lines = append(c.lines, line{kind, held, latest})
	})
	c.Now = func() time.Time { return c.now }
	return c
}

// A flood of one kind is one line per interval: its first event at once,
// then each interval's first, which stands for itself and the events held
// since; Close summarises the last interval. The counts add up to the
// flood.
func TestFloodIsOneLineAnInterval(t *testing.T) {
	c := newClocked(time.Second, 8)
	var written []int
	for sec := range 5 {
		for i := range 1000 {
			c.now = time.Unix(1000+int64(sec), int64(i)*int64(time.Millisecond))
			if n := c.Note("refused", fmt.Sprint(sec, "/", i)); n > 0 {
				if i != 0 {
					t.Fatalf("event %d/%d written (n=%d): only an interval's first is", sec, i, n)
				}
				written = append(written, n)
			}
		}
	}
	if want := []int{1, 1000, 1000, 1000, 1000}; !slices.Equal(written, want) {
		t.Fatalf("lines written for %v events, want %v", written, want)
	}
	if len(c.lines) != 0 {
		t.Fatalf("summaries before Close: %v", c.lines)
	}
	c.Close()
	if want := []line{{"refused", 999, "4/999"}}; !slices.Equal(c.lines, want) {
		t.Fatalf("summaries %v, want %v", c.lines, want)
	}
}

// Another kind is written at once during a flood of the first.
func TestKindsAreIndependent(t *testing.T) {
	c := newClocked(time.Second, 8)
	if n := c.Note("a", "a1"); n != 1 {
		t.Fatalf("first a: n=%d, want 1", n)
	}
	if n := c.Note("a", "a2"); n != 0 {
		t.Fatalf("second a: n=%d, want 0", n)
	}
	if n := c.Note("b", "b1"); n != 1 {
		t.Fatalf("first b during a's flood: n=%d, want 1", n)
	}
	if len(c.lines) != 0 {
		t.Fatalf("summaries before the interval ended: %v", c.lines)
	}
}

// A kind's event after its interval, with no summary written in
// between, stands for itself and the held ones: one line, not two.
func TestDueEventCarriesHeld(t *testing.T) {
	c := newClocked(time.Second, 8)
	c.Note("a", "1")
	c.Note("a", "2")
	c.Note("a", "3")
	c.now = c.now.Add(time.Second)
	if n := c.Note("a", "4"); n != 3 {
		t.Fatalf("n=%d, want 3 (this event and two held)", n)
	}
	c.Close()
	if len(c.lines) != 0 {
		t.Fatalf("summaries %v, want none: the event's line carried them", c.lines)
	}
	// Quiet for an interval: the next one is written at once again.
	c.now = c.now.Add(time.Second)
	if n := c.Note("a", "5"); n != 1 {
		t.Fatalf("after a quiet interval: n=%d, want 1", n)
	}
}

// Held events of a kind that went quiet are summarised by the next event
// of any other kind, by Flush once due, and by Close at once.
func TestSummaryWithoutTimer(t *testing.T) {
	c := newClocked(time.Second, 8)
	c.Note("a", "1")
	c.Note("a", "2")
	c.Flush()
	if len(c.lines) != 0 {
		t.Fatalf("Flush before due wrote %v", c.lines)
	}
	c.now = c.now.Add(time.Second)
	if n := c.Note("b", "b"); n != 1 {
		t.Fatalf("b: n=%d", n)
	}
	if want := []line{{"a", 1, "2"}}; !slices.Equal(c.lines, want) {
		t.Fatalf("after b: %v, want %v", c.lines, want)
	}

	c.lines = nil
	c.Note("b", "b2")
	c.Note("b", "b3")
	c.now = c.now.Add(999 * time.Millisecond)
	c.Flush()
	if len(c.lines) != 0 {
		t.Fatalf("Flush before due wrote %v", c.lines)
	}
	c.now = c.now.Add(time.Millisecond)
	c.Flush()
	if want := []line{{"b", 2, "b3"}}; !slices.Equal(c.lines, want) {
		t.Fatalf("Flush when due: %v, want %v", c.lines, want)
	}

	c.lines = nil
	c.Note("b", "b4") // within the summary's interval: held
	c.Close()
	if want := []line{{"b", 1, "b4"}}; !slices.Equal(c.lines, want) {
		t.Fatalf("Close: %v, want %v", c.lines, want)
	}
	c.lines = nil
	c.Close()
	if len(c.lines) != 0 {
		t.Fatalf("second Close wrote %v", c.lines)
	}
}

// Merge folds the held values: here the first three addresses.
func TestMerge(t *testing.T) {
	var got []string
	l := New(time.Second, 4, func(_ string, held int, latest []string) {
		got = append(got, fmt.Sprint(held, latest))
	})
	now := time.Unix(0, 0)
	l.Now = func() time.Time { return now }
	l.Merge = func(sofar, v []string) []string {
		if len(sofar) < 3 {
			sofar = append(sofar, v...)
		}
		return sofar
	}
	for i := range 10 {
		l.Note("k", []string{fmt.Sprint("10.0.0.", i)})
	}
	l.Close()
	if want := []string{"9 [10.0.0.1 10.0.0.2 10.0.0.3]"}; !slices.Equal(got, want) {
		t.Fatalf("summary %q, want %q", got, want)
	}
	// The next summary starts from nothing, not from the last one's.
	now = now.Add(time.Second)
	l.Note("k", []string{"a"})
	l.Note("k", []string{"b"})
	l.Close()
	if want := "1 [b]"; got[len(got)-1] != want {
		t.Fatalf("second summary %q, want %q", got[len(got)-1], want)
	}
}

// Ever-new kinds cannot grow the table: past the bound they share the
// zero kind's entry, which is limited like any other, and kinds that
// went quiet make room again.
func TestKindsBounded(t *testing.T) {
	const maxKinds = 16
	c := newClocked(time.Second, maxKinds)
	written := 0
	for i := range 100 * maxKinds {
		if c.Note(fmt.Sprint("kind", i), fmt.Sprint(i)) > 0 {
			written++
		}
		c.mu.Lock()
		n := len(c.kinds)
		c.mu.Unlock()
		if n > maxKinds {
			t.Fatalf("%d kinds kept, want at most %d", n, maxKinds)
		}
	}
	// maxKinds-1 kinds of their own and one shared entry's first event.
	if written != maxKinds {
		t.Errorf("%d lines written at once, want %d", written, maxKinds)
	}
	c.Close()
	want := []line{{"", 100*maxKinds - maxKinds, fmt.Sprint(100*maxKinds - 1)}}
	if !slices.Equal(c.lines, want) {
		t.Fatalf("summaries %v, want %v", c.lines, want)
	}
	c.now = c.now.Add(time.Second)
	c.Flush() // quiet for an interval: forgotten
	if n := c.Note("new", "x"); n != 1 {
		t.Fatalf("a new kind after the table emptied: n=%d, want 1", n)
	}
	c.mu.Lock()
	_, own := c.kinds["new"]
	c.mu.Unlock()
	if !own {
		t.Error("a new kind after the quiet interval still shares the overflow entry")
	}
}

type fakeTimer struct {
	d       time.Duration
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool {
	was := !t.stopped
	t.stopped = true
	return was
}

// With After, a flood that stops is summarised when its interval ends,
// with nothing else logged; the timer is armed once per interval, and
// Close stops it.
func TestAfterSchedulesSummary(t *testing.T) {
	c := newClocked(time.Second, 8)
	var timers []*fakeTimer
	c.After = func(d time.Duration, f func()) Stopper {
		ft := &fakeTimer{d: d, f: f}
		timers = append(timers, ft)
		return ft
	}
	c.Note("a", "1")
	c.now = c.now.Add(300 * time.Millisecond)
	for i := range 100 {
		c.Note("a", fmt.Sprint(i))
	}
	if len(timers) != 1 || timers[0].d != 700*time.Millisecond {
		t.Fatalf("timers %v, want one for the 700 ms left of the interval", timers)
	}
	c.now = c.now.Add(700 * time.Millisecond)
	timers[0].f()
	if want := []line{{"a", 100, "99"}}; !slices.Equal(c.lines, want) {
		t.Fatalf("after the timer: %v, want %v", c.lines, want)
	}
	if len(timers) != 1 {
		t.Fatalf("timer re-armed with nothing held: %d timers", len(timers))
	}
	c.Note("a", "late") // within the summary's interval
	if len(timers) != 2 {
		t.Fatalf("%d timers, want a second for the held event", len(timers))
	}
	c.lines = nil
	c.Close()
	if !timers[1].stopped {
		t.Error("Close left the timer running")
	}
	if want := []line{{"a", 1, "late"}}; !slices.Equal(c.lines, want) {
		t.Fatalf("Close: %v, want %v", c.lines, want)
	}
	c.Note("a", "after close")
	if len(timers) != 2 {
		t.Error("a closed Limiter armed a timer")
	}
}

// Events from many goroutines, on the real clock and timer, are each
// counted exactly once: in the line written for them or in a summary.
func TestConcurrentCountsExact(t *testing.T) {
	var mu sync.Mutex
	summarised := 0
	l := New(time.Millisecond, 4, func(_ int, held int, _ struct{}) {
		mu.Lock()
		summarised += held
		mu.Unlock()
	})
	l.After = func(d time.Duration, f func()) Stopper { return time.AfterFunc(d, f) }
	var wg sync.WaitGroup
	var written [8]int
	for g := range written {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20000 {
				written[g] += l.Note(i%7, struct{}{})
			}
		}()
	}
	wg.Wait()
	l.Close()
	// A timer that fired before Close may still be writing.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		total := summarised
		mu.Unlock()
		for _, w := range written {
			total += w
		}
		if total == len(written)*20000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lines stand for %d events, want %d", total, len(written)*20000)
		}
		time.Sleep(time.Millisecond)
	}
}

// Without a summary function the held events are never dropped: the
// kind's next event after the interval stands for them, however much
// else happened, and Flush and Close write nothing.
func TestNoSummaryCarries(t *testing.T) {
	l := New[string, struct{}](time.Second, 8, nil)
	now := time.Unix(0, 0)
	l.Now = func() time.Time { return now }
	var timers int
	l.After = func(time.Duration, func()) Stopper { timers++; return &fakeTimer{} }
	l.Note("a", struct{}{})
	for range 5 {
		l.Note("a", struct{}{})
	}
	now = now.Add(3 * time.Second)
	l.Note("b", struct{}{}) // would summarise a, had it a summary
	l.Flush()
	l.Close()
	if n := l.Note("a", struct{}{}); n != 6 {
		t.Errorf("n=%d, want 6: this event and five held", n)
	}
	if timers != 0 {
		t.Errorf("%d timers armed with nothing to write", timers)
	}
}

// Reset forgets what was held and starts the interval again: the next
// event within it is held, and the next due line counts from the reset.
func TestReset(t *testing.T) {
	c := newClocked(time.Second, 8)
	c.Note("a", "1")
	c.Note("a", "2")
	c.now = c.now.Add(900 * time.Millisecond)
	c.Reset("a")
	c.now = c.now.Add(500 * time.Millisecond) // due after the first line, not after the reset
	if n := c.Note("a", "3"); n != 0 {
		t.Fatalf("n=%d within the interval the reset started, want 0", n)
	}
	c.now = c.now.Add(500 * time.Millisecond)
	if n := c.Note("a", "4"); n != 2 {
		t.Fatalf("n=%d, want 2: this event and the one held since the reset", n)
	}
	c.Close()
	if len(c.lines) != 0 {
		t.Fatalf("summaries %v, want none", c.lines)
	}
}

func BenchmarkNoteHeld(b *testing.B) {
	l := New(time.Hour, 64, func(string, int, error) {})
	l.Note("k", nil)
	b.ReportAllocs()
	for b.Loop() {
		l.Note("k", nil)
	}
}
