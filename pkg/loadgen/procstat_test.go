package loadgen

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// utime 1234 and stime 766 ticks → 20 s; the command name holds
	// spaces and a ')' to make sure fields are counted from the last one.
	line := "4242 (srt whep) (x)) S 1 4242 4242 0 -1 4194560 1000 0 0 0 1234 766 0 0 20 0 12 0 555 123456789 2000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
	got, err := ParseStatCPU([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if want := 20 * time.Second; got != want {
		t.Errorf("CPU = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "4242 srtwhep S 1", "1 (a) S 1 2 3", "1 (a) S 1 1 1 0 -1 0 0 0 0 0 x 766 0"} {
		if _, err := ParseStatCPU([]byte(bad)); err == nil {
			t.Errorf("ParseStatCPU(%q) succeeded", bad)
		}
	}
}

func TestParseVmRSS(t *testing.T) {
	status := "Name:\tsrtwhep\nVmPeak:\t  900000 kB\nVmRSS:\t   51200 kB\nThreads:\t9\n"
	got, err := ParseVmRSS([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(50 << 20); got != want {
		t.Errorf("RSS = %d, want %d", got, want)
	}
	if _, err := ParseVmRSS([]byte("Name:\tkthreadd\n")); err == nil {
		t.Error("ParseVmRSS without VmRSS succeeded")
	}
}

func TestProcReadsAFakeRoot(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "77")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stat := "77 (x) R 1 1 1 0 -1 0 0 0 0 0 150 50 0 0 20 0 1 0 1 1 1\n"
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "status"), []byte("VmRSS:\t1024 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Proc{PID: 77, Root: root}
	if cpu, err := p.CPU(); err != nil || cpu != 2*time.Second {
		t.Errorf("CPU = %v, %v; want 2s", cpu, err)
	}
	if rss, err := p.RSS(); err != nil || rss != 1<<20 {
		t.Errorf("RSS = %d, %v; want 1 MiB", rss, err)
	}
	if _, err := (Proc{PID: 78, Root: root}).CPU(); err == nil {
		t.Error("CPU of a missing process succeeded")
	}
}

func TestSelfCPUIsReadable(t *testing.T) {
	if _, err := (Proc{}).CPU(); err != nil {
		t.Fatalf("reading /proc/self/stat: %v", err)
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
