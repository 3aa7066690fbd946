package admission

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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

// ownCgroup is this test process's cgroup v2 path, read from its real
// /proc/self/cgroup.
func ownCgroup(t *testing.T) string {
	t.Helper()
	self, err := procfs.Self()
	if err != nil {
		t.Fatal(err)
	}
	cgs, err := self.Cgroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, cg := range cgs {
		if cg.HierarchyID == 0 {
			return cg.Path
		}
	}
	return "/"
}

func writeCPUMax(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cpu.max"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The quota is looked up where this process's cgroup really is, and an
// ancestor's smaller quota wins over its own.
func TestQuotaOfOwnCgroup(t *testing.T) {
	root := t.TempDir()
	own := filepath.Join(root, ownCgroup(t))
	writeCPUMax(t, own, "50000 100000\n")
	if q, ok := cgroupQuota(root); !ok || q != 0.5 {
		t.Fatalf("quota %v, %v; want 0.5 CPUs from %s", q, ok, own)
	}
	c := New(Config{cgroupRoot: root})
	if c.CPUs() > 0.5 {
		t.Errorf("CPUs = %v, want at most the quota, 0.5", c.CPUs())
	}
	if own == root {
		return // the process sits in the root cgroup: it has no ancestor
	}
	writeCPUMax(t, root, "25000 100000\n")
	if q, ok := cgroupQuota(root); !ok || q != 0.25 {
		t.Errorf("quota %v, %v; want the root's 0.25 CPUs", q, ok)
	}
	if _, ok := cgroupQuota(t.TempDir()); ok {
		t.Error("a quota was found where no cpu.max exists")
	}
}

// The controller refuses while this process's real CPU use, read from
// /proc, is over the limit, and admits again when it falls.
func TestCheckFollowsUsage(t *testing.T) {
	c := New(Config{Interval: 50 * time.Millisecond, Window: 50 * time.Millisecond})
	// A limit of a third of one core: one spinning goroutine is over it,
	// an idle test process far under.
	c.SetMaxCPU(0.33 / c.CPUs())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	deadline, stop := context.WithTimeout(t.Context(), 20*time.Second)
	defer stop()
	spin, stopSpin := context.WithCancel(deadline)
	spun := make(chan int)
	go func() {
		x := 0
		for spin.Err() == nil {
			for i := range 100_000 {
				x += i
			}
		}
		spun <- x
	}()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	err := c.Check()
	for ; err == nil; err = c.Check() {
		select {
		case <-deadline.Done():
			stopSpin()
			<-spun
			t.Fatalf("never refused while spinning a core (usage %.2f of %.1f CPUs)", c.Usage(), c.CPUs())
		case <-tick.C:
		}
	}
	stopSpin()
	<-spun
	if !errors.Is(err, ErrOverloaded) {
		t.Fatalf("Check = %v", err)
	}
	for c.Check() != nil {
		select {
		case <-deadline.Done():
			t.Fatalf("never admitted again when idle (usage %.2f)", c.Usage())
		case <-tick.C:
		}
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
