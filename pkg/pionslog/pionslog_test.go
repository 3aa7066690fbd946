package pionslog

import (
	"bytes"
	"context"
	"io"
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

// TestExpectedWarnings feeds the lines pion v4 writes, formatted the way
// pion formats them, and checks which stay warnings: the ones srtwhep causes
// on purpose go to debug, their neighbours from the same code do not.
func TestExpectedWarnings(t *testing.T) {
	cases := []struct {
		name, format string
		args         []any
		want         slog.Level
	}{
		{"wildcard UDP mux (ice udp_mux.go)", "UDPMuxDefault should not listening on unspecified address, use NewMultiUDPMuxFromPort instead", nil, slog.LevelDebug},
		{"browser closes an unused ICE-TCP connection (ice tcp_mux.go)", "Error reading first packet from %s: %s", []any{"10.213.0.2:55776", io.EOF}, slog.LevelDebug},
		{"browser closes an ICE-TCP connection it used (ice tcp_packet_conn.go)", "Failed to read streaming packet: %s", []any{io.EOF}, slog.LevelDebug},
		{"truncated first packet", "Error reading first packet from %s: %s", []any{"10.213.0.2:55776", io.ErrUnexpectedEOF}, slog.LevelWarn},
		{"reset first packet", "Error reading first packet from %s: %s", []any{"10.213.0.2:55776", "read tcp 10.213.0.1:8189->10.213.0.2:55776: read: connection reset by peer"}, slog.LevelWarn},
		{"first packet timeout", "Error reading first packet from %s: %s", []any{"10.213.0.2:55776", "read tcp 10.213.0.1:8189->10.213.0.2:55776: i/o timeout"}, slog.LevelWarn},
		{"truncated streaming packet", "Failed to read streaming packet: %s", []any{io.ErrUnexpectedEOF}, slog.LevelWarn},
		{"first packet too big", "Buffer too small for first packet from %s: %s", []any{"10.213.0.2:55776", io.ErrShortBuffer}, slog.LevelWarn},
		{"other mux trouble", "LocalAddr is not a net.UDPAddr, got %T", []any{struct{}{}}, slog.LevelWarn},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []slog.Level
			h := &levelRecorder{levels: &got}
			Factory{Log: slog.New(h)}.NewLogger("tcpmux").Warnf(tc.format, tc.args...)
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("logged at %v, want [%v]", got, tc.want)
			}
		})
	}
}

// levelRecorder keeps the level of every record; it accepts every level so
// that a lowered record is seen rather than filtered out.
type levelRecorder struct{ levels *[]slog.Level }

func (h *levelRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelRecorder) Handle(_ context.Context, r slog.Record) error {
	*h.levels = append(*h.levels, r.Level)
	return nil
}
func (h *levelRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *levelRecorder) WithGroup(string) slog.Handler      { return h }
