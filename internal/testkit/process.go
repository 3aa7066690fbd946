package testkit

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

const ffmpegHint = "install it: apt-get install -y ffmpeg (Debian's build has srt and libx264), or run `make test`, which installs it"

// Process is a child process that lives until it exits or the test ends.
type Process struct {
	Name string
	Cmd  *exec.Cmd
	// Log holds the process's stdout and stderr together.
	Log *LogBuffer

	done chan struct{} // closed when the process has been waited for
	err  error         // Wait's result, set before done is closed
}

// StartProcess starts cmd, sending its output to the Process's Log. When
// the test ends the process is killed if still running, and its output is
// logged if the test failed.
func StartProcess(t testing.TB, name string, cmd *exec.Cmd) *Process {
	t.Helper()
	p := &Process{Name: name, Cmd: cmd, Log: &LogBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.Log, p.Log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.Log.String())
		}
	})
	return p
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Wait waits for the process to exit by itself and returns its exit error,
// failing the test if it is still running after timeout.
func (p *Process) Wait(t testing.TB, timeout time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		t.Fatalf("%s still running after %v; output:\n%s", p.Name, timeout, p.Log.String())
		return nil
	}
}

// WaitLog waits until the process prints a line containing every one of
// subs, failing at once if it exits first.
func (p *Process) WaitLog(t testing.TB, timeout time.Duration, subs ...string) string {
	t.Helper()
	return p.Log.waitLog(t, timeout, p.done, p.Name, subs)
}

func ffmpegPath(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Fatalf("ffmpeg not found: %s", ffmpegHint)
	}
	return path
}

// quiet keeps ffmpeg's output to what a failing test needs, and -nostdin
// stops it from reading the terminal of whoever runs the tests.
var quiet = []string{"-hide_banner", "-loglevel", "warning", "-nostdin"}

// FFmpeg runs ffmpeg to completion, for clips made before a test starts,
// and fails the test with ffmpeg's output if it fails.
func FFmpeg(t testing.TB, args ...string) {
	t.Helper()
	out, err := exec.Command(ffmpegPath(t), append(append([]string{"-y"}, quiet...), args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg %s: %v (%s)\n%s", strings.Join(args, " "), err, ffmpegHint, out)
	}
}

// StartFFmpeg runs ffmpeg in the background, typically a publisher, until
// it exits or the test ends.
func StartFFmpeg(t testing.TB, args ...string) *Process {
	t.Helper()
	cmd := exec.Command(ffmpegPath(t), append(append([]string{}, quiet...), args...)...)
	return StartProcess(t, "ffmpeg", cmd)
}
