package srt

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// libsrt's own threads are C threads; only goroutines are checked for leaks.
func TestMain(m *testing.M) {
	testkit.Main(m, Init, Cleanup)
}

// logRecorder is a slog.Handler that keeps every record so tests can wait
// for a line instead of sleeping.
type logRecorder struct {
	mu      sync.Mutex
	lines   []logLine
	changed chan struct{}
	attrs   []slog.Attr
	root    *logRecorder
}

type logLine struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func newLogRecorder() *logRecorder {
	r := &logRecorder{changed: make(chan struct{})}
	r.root = r
	return r
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	l := logLine{level: rec.Level, msg: rec.Message, attrs: map[string]string{}}
	for _, a := range r.attrs {
		l.attrs[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool {
		l.attrs[a.Key] = a.Value.String()
		return true
	})
	root := r.root
	root.mu.Lock()
	root.lines = append(root.lines, l)
	close(root.changed)
	root.changed = make(chan struct{})
	root.mu.Unlock()
	return nil
}

func (r *logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &logRecorder{root: r.root, attrs: append(append([]slog.Attr{}, r.attrs...), as...)}
}

func (r *logRecorder) WithGroup(string) slog.Handler { return r }

// wait returns the first line matching pred, waiting up to d.
func (r *logRecorder) wait(t *testing.T, d time.Duration, what string, pred func(logLine) bool) logLine {
	t.Helper()
	deadline := time.After(d)
	for {
		r.mu.Lock()
		for _, l := range r.lines {
			if pred(l) {
				r.mu.Unlock()
				return l
			}
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no log line %s within %s; got:\n%s", what, d, r.dump())
		}
	}
}

func (r *logRecorder) dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, l := range r.lines {
		fmt.Fprintf(&b, "  %s %q %v\n", l.level, l.msg, l.attrs)
	}
	return b.String()
}

// running is a Server started by startServer.
type running struct {
	srv    *Server
	log    *logRecorder
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned; err is then set
	err    error
}

// startServer runs a Server on 127.0.0.1:0 until the test ends.
func startServer(t *testing.T, cfg Config) *running {
	t.Helper()
	rec := newLogRecorder()
	cfg.Listen = "127.0.0.1:0"
	cfg.Logger = slog.New(rec)
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{srv: srv, log: rec, cancel: cancel, done: make(chan struct{})}
	go func() {
		r.err = srv.Run(ctx)
		close(r.done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
			if r.err != nil {
				t.Errorf("Run: %v", r.err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return after cancel")
		}
	})
	select {
	case <-srv.Ready():
	case <-r.done:
		t.Fatalf("Run ended before Ready: %v", r.err)
	case <-time.After(5 * time.Second):
		t.Fatal("server not ready")
	}
	if srv.Addr() == nil || srv.Addr().Port == 0 {
		t.Fatalf("Addr() = %v after Ready, want the bound port", srv.Addr())
	}
	return r
}
