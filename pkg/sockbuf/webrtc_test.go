package sockbuf

import (
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// SizeWebRTC warns once, with the sysctl line, when the kernel caps the
// buffer it asks for, and returns the socket's drop counter, readable from
// the start.
func TestSizeWebRTC(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("socket drops are read from /proc on Linux only")
	}
	var buf testkit.LogBuffer
	d := SizeWebRTC(listen(t), 1<<30, buf.Logger(slog.LevelInfo)) // above any stock rmem_max
	lines := buf.Lines("level=WARN", "WebRTC UDP socket buffer smaller than configured")
	if len(lines) != 1 || !strings.Contains(lines[0], "key=webrtc.socketBuffer") {
		t.Errorf("warning lines %q\nlog:\n%s", lines, buf.String())
	}
	if d == nil {
		t.Fatal("no drop counter for the WebRTC socket")
	}
	if _, err := d.Count(); err != nil {
		t.Errorf("Count: %v", err)
	}
	if n := (*Drops)(nil).Count0(); n != 0 {
		t.Errorf("a nil counter counts %d", n)
	}
}
