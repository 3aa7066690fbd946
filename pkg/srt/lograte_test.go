package srt

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// A flood becomes one line per interval, each summary counting what it
// stands for; another kind of line is not hidden by it; a quiet logger is
// not limited at all.
func TestLogLimiter(t *testing.T) {
	var buf testkit.LogBuffer
	log := buf.Logger(slog.LevelWarn)
	now := time.Unix(0, 0)
	ll := newLogLimiter(time.Second)
	ll.lim.Now = func() time.Time { return now }
	// What the timer does when the interval ends (pkg/lograte tests the
	// timer itself).
	ll.lim.After = nil
	fire := ll.lim.Flush
	line := func(msg string, lvl slog.Level) {
		ll.log(limitedLine{log: log, level: lvl, msg: msg, area: "newConnection"})
	}

	// 10 s of 10,000 lines a second, of one kind (the numbers differ).
	for sec := range 10 {
		for i := range 10000 {
			now = time.Unix(int64(sec), int64(i)*int64(100*time.Microsecond))
			lvl := slog.LevelError
			if i%2 == 1 {
				lvl = slog.LevelWarn
			}
			line(fmt.Sprintf("rogue handshake from 10.0.%d.%d:%d", i%256, sec, 4000+i), lvl)
		}
		now = time.Unix(int64(sec+1), 0)
		fire()
	}
	// Debug lines are not enabled and cost nothing.
	line("detail", slog.LevelDebug)
	lines := buf.Lines("libsrt", "rogue")
	if len(lines) != 11 { // the first line, then one summary a second
		t.Fatalf("%d lines for a 10 s flood, want 11:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if !strings.Contains(lines[1], "suppressed=9999") || !strings.Contains(lines[1], "level=ERROR") {
		t.Errorf("first summary: %s", lines[1])
	}
	if !strings.Contains(lines[10], "suppressed=10000") {
		t.Errorf("last summary: %s", lines[10])
	}

	// Quiet again: a line a second passes at once, unsummarised.
	for sec := 12; sec < 15; sec++ {
		now = time.Unix(int64(sec), 0)
		line("peer idle", slog.LevelWarn)
	}
	if got := len(buf.Lines("peer idle")); got != 3 {
		t.Errorf("%d of 3 spaced lines logged", got)
	}

	// A different kind in the middle of a burst is not hidden by it, and
	// a flood of ever-new kinds is still bounded by the table.
	now = now.Add(5 * time.Second)
	line("Password required", slog.LevelWarn)
	line("Password required", slog.LevelWarn)
	line("Incorrect passphrase", slog.LevelWarn)
	if got := len(buf.Lines("Incorrect passphrase")); got != 1 {
		t.Errorf("a second kind within the interval was held back")
	}
	now = now.Add(time.Second)
	fire()
	for i := range 1000 {
		line(fmt.Sprintf("kind %c%c", 'a'+i%26, 'a'+i/26%26), slog.LevelWarn)
	}
	now = now.Add(time.Second)
	fire()
	// One line per table entry at once, one summary per entry a second
	// later.
	if got := len(buf.Lines("kind ")); got > 2*maxLineKinds {
		t.Errorf("1000 kinds made %d lines", got)
	}

	// stop writes a pending summary at once.
	now = now.Add(5 * time.Second)
	line("late", slog.LevelWarn)
	now = now.Add(100 * time.Millisecond)
	line("late", slog.LevelWarn)
	ll.stop()
	if got := buf.Lines("late"); len(got) != 2 || !strings.Contains(got[1], "suppressed=1") {
		t.Errorf("stop did not flush: %q", got)
	}
}

func TestLibsrtLineClipped(t *testing.T) {
	var buf testkit.LogBuffer
	write(limitedLine{log: buf.Logger(slog.LevelWarn), level: slog.LevelWarn, msg: strings.Repeat("x", 10000)}, 0)
	if n := len(buf.String()); n > maxLibsrtLine+200 {
		t.Errorf("a 10 kB libsrt line was logged as %d bytes", n)
	}
}
