package admission

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseStatCPU(t *testing.T) {
	line := "1234 (my (odd) name) S 1 1234 1234 0 -1 4194560 500 0 0 0 250 150 0 0 20 0 8 0 100 0 0"
	got, err := ParseStatCPU(line)
	if err != nil || got != 4.0 {
		t.Fatalf("got %v, %v; want 4.0 s (250+150 ticks)", got, err)
	}
	for _, bad := range []string{"", "1 (x S 1", "1 (x) S 1 2", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 a b"} {
		if _, err := ParseStatCPU(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		if _, err := ParseStatCPU(string(b)); err != nil {
			t.Errorf("real /proc/self/stat: %v", err)
		}
	}
}

func TestParseCPUMax(t *testing.T) {
	for in, want := range map[string]float64{"100000 100000\n": 1, "50000 100000": 0.5, "150000 100000": 1.5} {
		if got, ok := ParseCPUMax(in); !ok || got != want {
			t.Errorf("%q: got %v %v, want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"max 100000", "", "x 1", "1 0"} {
		if _, ok := ParseCPUMax(in); ok {
			t.Errorf("%q accepted", in)
		}
	}
}

// writeStat fakes /proc/self/stat with the given total ticks.
func writeStat(t *testing.T, path string, ticks int) {
	t.Helper()
	line := "1 (srtwhep) S 1 1 1 0 -1 0 0 0 0 0 " + strconv.Itoa(ticks) + " 0 0 0 20 0 1 0 1 0 0\n"
	// Replace the file atomically, as the kernel's /proc does: a reader
	// must never see it empty.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// The controller refuses while sampled usage is over the limit and admits
// again when it falls.
func TestCheckFollowsUsage(t *testing.T) {
	dir := t.TempDir()
	stat := filepath.Join(dir, "stat")
	os.WriteFile(filepath.Join(dir, "cpu.max"), []byte("100000 100000"), 0o644)
	writeStat(t, stat, 0)
	c := New(Config{MaxCPU: 0.8, Interval: 50 * time.Millisecond, Window: 50 * time.Millisecond, statPath: stat, cgroupDir: dir})
	if c.CPUs() != 1 {
		t.Fatalf("CPUs = %v, want 1 from the cgroup quota", c.CPUs())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	// Burn "100 ticks per sample": 1 s of CPU every 50 ms is far over 80%.
	ticks := 0
	deadline := time.Now().Add(5 * time.Second)
	for c.Check() == nil {
		if time.Now().After(deadline) {
			t.Fatal("never refused under full load")
		}
		ticks += 100
		writeStat(t, stat, ticks)
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.Check(); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("Check = %v", err)
	}
	// Idle: no more ticks; the window mean falls to 0.
	for c.Check() != nil {
		if time.Now().After(deadline) {
			t.Fatal("never admitted again when idle")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if c.Refused() == 0 {
		t.Error("refusals not counted")
	}
}

func TestDisabled(t *testing.T) {
	c := New(Config{})
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	c.SetMaxCPU(0.5)
	if c.limit() != 0.5 {
		t.Fatalf("limit %v", c.limit())
	}
}
