package loadgen

import (
	"context"
	"testing"
	"time"
)

// TestSelfCPUCountsWork reads this test process's real /proc entry: CPU
// spent in a busy loop must show up in SelfCPU.
func TestSelfCPUCountsWork(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c0, err := SelfCPU()
	if err != nil {
		t.Fatal(err)
	}
	// The kernel counts CPU time in ticks of 10 ms; spin until two have
	// passed so the check cannot pass on rounding alone.
	x := 0
	for {
		for i := range 1_000_000 {
			x += i
		}
		c1, err := SelfCPU()
		if err != nil {
			t.Fatal(err)
		}
		if c1 < c0 {
			t.Fatalf("CPU time went back: %v after %v", c1, c0)
		}
		if c1-c0 >= 20*time.Millisecond {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("SelfCPU stayed at %v while this test spun (sum %d)", c1, x)
		}
	}
}

func TestCPUPercent(t *testing.T) {
	if got := CPUPercent(500*time.Millisecond, 2*time.Second); got != 25 {
		t.Errorf("CPUPercent = %v, want 25", got)
	}
	if got := CPUPercent(time.Second, 0); got != 0 {
		t.Errorf("CPUPercent over no time = %v, want 0", got)
	}
}
