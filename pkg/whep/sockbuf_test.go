package whep

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// A buffer the kernel caps is reported once, with the sysctl line that
// lifts the cap; the drop counter is readable from the start.
func TestSocketBufferCapped(t *testing.T) {
	var buf testkit.LogBuffer
	srv, _ := startServer(t, newTestSource(), func(c *Config) {
		c.SocketBuffer = 1 << 30 // above any stock rmem_max
		c.Logger = buf.Logger(slog.LevelInfo)
	})
	lines := buf.Lines("level=WARN", "WebRTC UDP socket buffer smaller than configured")
	if len(lines) != 1 || !strings.Contains(lines[0], "sysctl -w net.core.rmem_max=1073741824") ||
		!strings.Contains(lines[0], "key=webrtc.socketBuffer") {
		t.Fatalf("warning lines %q\nlog:\n%s", lines, buf.String())
	}
	if (*srv.plane.Load()).udpDrops() == nil {
		t.Error("no drop counter for the WebRTC socket")
	}
	_ = srv.Stats().UDPReceiveDrops
}
