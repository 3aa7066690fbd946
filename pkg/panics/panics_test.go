package panics

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// TestCatch: a panic in a goroutine with Catch deferred ends only that
// goroutine, with one log line carrying the stack and the attributes, a
// count under its place, and the error handed to end; a goroutine that
// does not panic calls nothing.
func TestCatch(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	before := Counts()[ViewerSender]
	var got error
	var wg sync.WaitGroup
	wg.Go(func() {
		defer Catch(log, ViewerSender, func(err error) *slog.Logger { got = err; return nil }, "session", "s1")
		var m map[string]int
		m["boom"]++ // a nil-map write: a real runtime panic
	})
	wg.Go(func() {
		defer Catch(log, ViewerSender, func(error) *slog.Logger { t.Error("end called without a panic"); return nil })
	})
	wg.Wait()
	var pe *Error
	if !errors.As(got, &pe) || pe.Where != ViewerSender || !strings.Contains(got.Error(), "assignment to entry in nil map") {
		t.Fatalf("end got %v", got)
	}
	if n := Counts()[ViewerSender] - before; n != 1 {
		t.Errorf("counted %d panics, want 1", n)
	}
	line := buf.String()
	if strings.Count(line, "\n") != 1 || !strings.Contains(line, "session=s1") || !strings.Contains(line, "where=viewer_sender") ||
		!strings.Contains(line, "panics_test.go") {
		t.Errorf("log: %q, want one line with the session, the place and the stack", line)
	}
}
