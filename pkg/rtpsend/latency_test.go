package rtpsend

import (
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
)

func TestLatencyHistogram(t *testing.T) {
	var h Latency
	now := time.Now()
	for _, age := range []time.Duration{100 * time.Microsecond, 3 * time.Millisecond, 3 * time.Millisecond, 2 * time.Second} {
		h.observeSent(&av.AccessUnit{Arrival: now.Add(-age)})
	}
	h.observeSent(&av.AccessUnit{}) // no arrival time: not observed
	s := h.Snapshot()
	if s.Count != 4 || len(s.UpperBounds) != len(serverLatencyBounds) || len(s.Cumulative) != len(s.UpperBounds) {
		t.Fatalf("snapshot %+v, want 4 observations over %d bounds", s, len(serverLatencyBounds))
	}
	at := func(bound float64) uint64 {
		for i, b := range s.UpperBounds {
			if b == bound {
				return s.Cumulative[i]
			}
		}
		t.Fatalf("no bound %v", bound)
		return 0
	}
	// The ages grow a little while the test runs, never past a bucket.
	if at(0.00025) != 1 || at(0.002) != 1 || at(0.005) != 3 || at(1) != 3 {
		t.Errorf("cumulative %v over %v", s.Cumulative, s.UpperBounds)
	}
	if s.SumSeconds < 2.006 || s.SumSeconds > 3 {
		t.Errorf("sum %v s, want about 2.0061", s.SumSeconds)
	}
}

// The observation runs once per picture per viewer: it must not allocate.
func TestLatencyHistogramNoAlloc(t *testing.T) {
	var h Latency
	au := &av.AccessUnit{Arrival: time.Now()}
	if n := testing.AllocsPerRun(1000, func() { h.observeSent(au) }); n != 0 {
		t.Errorf("observeSent allocates %v times", n)
	}
}
