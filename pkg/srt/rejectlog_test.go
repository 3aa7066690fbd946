package srt

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSpace(s.b.String()), "\n")
}

// TestRejectLogSummarises: 50 rejections of one kind from 50 addresses
// within a second are one line at once and one summary with their count
// and three addresses; a table of ever-new kinds stays bounded.
func TestRejectLogSummarises(t *testing.T) {
	var buf syncBuf
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var rl rejectLog
	for i := range 50 {
		rl.warn(log, "who|bad request (1400)", "srt publisher rejected", fmt.Sprintf("127.0.0.%d:9", i+2), "n", i)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(buf.lines()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling for the summary, with a deadline
	}
	lines := buf.lines()
	if len(lines) != 2 || !strings.Contains(lines[1], "count=49") ||
		!strings.Contains(lines[1], "examples=127.0.0.3:9,127.0.0.4:9,127.0.0.5:9") || !strings.Contains(lines[1], "n=49") {
		t.Fatalf("lines:\n%s\nwant the first rejection, then one summary of 49 with three addresses and the latest's attributes", strings.Join(lines, "\n"))
	}
	for i := range 10 * rejectKinds {
		rl.warn(slog.New(slog.DiscardHandler), fmt.Sprintf("kind%d", i), "m", "r")
	}
	rl.mu.Lock()
	n := len(rl.kinds)
	rl.mu.Unlock()
	if n > rejectKinds {
		t.Errorf("%d kinds kept, want at most %d", n, rejectKinds)
	}
}
