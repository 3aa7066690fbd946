package ladder

import (
	"os/exec"
	"testing"
	"time"
)

// TestWatchReadsABusyProcess watches a real process that keeps a core
// busy, as the server does under load: its /proc entry must show CPU and
// memory.
func TestWatchReadsABusyProcess(t *testing.T) {
	busy := exec.Command("sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = busy.Process.Kill()
		_ = busy.Wait()
	})
	srv, err := openServer(busy.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	u := srv.watch(t.Context(), 1500*time.Millisecond)
	if u.Err != nil {
		t.Fatal(u.Err)
	}
	if u.CPUMean <= 0 || u.CPUPeak < u.CPUMean {
		t.Errorf("CPU mean %.1f%%, peak %.1f%%; want mean > 0 and peak ≥ mean", u.CPUMean, u.CPUPeak)
	}
	if u.RSS == 0 {
		t.Error("RSS 0 bytes for a running shell")
	}
}

func TestOpenServerNeedsARunningProcess(t *testing.T) {
	if _, err := openServer(0); err == nil {
		t.Error("PID 0 accepted")
	}
	// A process that has exited and been reaped has no /proc entry.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := openServer(cmd.ProcessState.Pid()); err == nil {
		t.Errorf("PID %d of an exited process accepted", cmd.ProcessState.Pid())
	}
}
