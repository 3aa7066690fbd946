package testkit

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// LogBuffer collects log text written from any goroutine (a server's
// slog handler, a child process's stderr) so tests can assert on the exact
// lines operators see. Waiting is driven by writes, not by polling.
type LogBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

// Write appends p and wakes every WaitLog.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
	return n, err
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines returns the non-empty lines that contain every one of subs.
func (b *LogBuffer) Lines(subs ...string) []string {
	var out []string
	for _, line := range strings.Split(b.String(), "\n") {
		if line != "" && containsAll(line, subs) {
			out = append(out, line)
		}
	}
	return out
}

// WaitLog waits until a line containing every one of subs is written and
// returns the first such line, failing the test after timeout.
func (b *LogBuffer) WaitLog(t testing.TB, timeout time.Duration, subs ...string) string {
	t.Helper()
	return b.waitLog(t, timeout, nil, "", subs)
}

// waitLog is WaitLog that also fails as soon as exited is closed, naming
// who, so a crashed process fails the test at once instead of at timeout.
func (b *LogBuffer) waitLog(t testing.TB, timeout time.Duration, exited <-chan struct{}, who string, subs []string) string {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		// Take the wake-up channel before reading, so a write that lands
		// between the read and the select is not missed.
		b.mu.Lock()
		if b.changed == nil {
			b.changed = make(chan struct{})
		}
		changed := b.changed
		b.mu.Unlock()
		if ls := b.Lines(subs...); len(ls) > 0 {
			return ls[0]
		}
		select {
		case <-changed:
		case <-exited:
			// The process may have written the line just before exiting.
			if ls := b.Lines(subs...); len(ls) > 0 {
				return ls[0]
			}
			t.Fatalf("%s exited before logging a line with %q:\n%s", who, subs, b.String())
		case <-deadline.C:
			t.Fatalf("no log line with %q within %v:\n%s", subs, timeout, b.String())
		}
	}
}

// Logger returns a text logger writing into b at level and above. Time is
// left out so that whole lines can be compared.
func (b *LogBuffer) Logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestLogger returns a logger that writes through t.Log at level and
// above. pion logs from goroutines that may outlive the test by a moment,
// and t.Log after a test ended is a data race, so forwarding stops when
// the test's cleanup runs.
func TestLogger(t *testing.T, level slog.Level) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

type testWriter struct {
	t    *testing.T
	mu   sync.Mutex
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}
