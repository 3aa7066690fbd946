package srt

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// TestRejectLogSummarises: 50 rejections of one kind from 50 addresses
// within a second are one line at once and one summary with their count
// and three addresses.
func TestRejectLogSummarises(t *testing.T) {
	logs := &testkit.LogBuffer{}
	log := logs.Logger(slog.LevelInfo)
	var rl rejectLog
	defer rl.close()
	for i := range 50 {
		rl.warn(log, "who|bad request (1400)", "srt publisher rejected", fmt.Sprintf("127.0.0.%d:9", i+2), "n", i)
	}
	logs.WaitLog(t, 10*time.Second, "srt publisher rejected", "count=49", "examples=127.0.0.3:9,127.0.0.4:9,127.0.0.5:9", "n=49")
	if lines := logs.Lines("srt publisher rejected"); len(lines) != 2 {
		t.Fatalf("lines:\n%s\nwant the first rejection and one summary", strings.Join(lines, "\n"))
	}
}
