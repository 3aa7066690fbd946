package pionslog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestLevels(t *testing.T) {
	var buf bytes.Buffer
	l := Factory{Log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))}.NewLogger("ice")
	l.Debug("chatter")
	l.Infof("more %s", "chatter")
	l.Warnf("candidate %d failed", 3)
	l.Warn("io: read/write on closed pipe") // routine: lowered to debug
	l.Error("boom")
	out := buf.String()
	for _, want := range []string{`level=WARN msg="candidate 3 failed" lib=pion scope=ice`, `level=ERROR msg=boom lib=pion scope=ice`} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	for _, not := range []string{"chatter", "closed pipe"} {
		if strings.Contains(out, not) {
			t.Errorf("%q should not be logged at warn:\n%s", not, out)
		}
	}
}
