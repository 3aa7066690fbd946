package whep

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/mediaplane"
	"github.com/srtwhep/srtwhep/pkg/plane"
)

// A buffer the kernel caps is reported once, with the sysctl line that
// lifts the cap; the drop counter is readable from the start.
func TestSocketBufferCapped(t *testing.T) {
	var buf testkit.LogBuffer
	srv, _ := startServerNet(t, newTestSource(), func(c *plane.Config) {
		c.SocketBuffer = 1 << 30 // above any stock rmem_max
		c.Logger = buf.Logger(slog.LevelInfo)
	}, nil)
	lines := buf.Lines("level=WARN", "WebRTC UDP socket buffer smaller than configured")
	if len(lines) != 1 || !strings.Contains(lines[0], "sysctl -w net.core.rmem_max=1073741824") ||
		!strings.Contains(lines[0], "key=webrtc.socketBuffer") {
		t.Fatalf("warning lines %q\nlog:\n%s", lines, buf.String())
	}
	_, _, _ = srv.cfg.Plane.(*mediaplane.Plane).SocketStats()
}
