package srt

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A receive buffer the kernel caps is reported once at start-up, with the
// sysctl line that lifts the cap.
func TestSocketBufferCapped(t *testing.T) {
	r := startServer(t, Config{
		SocketBuffer: 1 << 30, // above any stock rmem_max
		Serve:        func(context.Context, *Conn) error { return nil },
	})
	l := r.log.wait(t, time.Second, "the socket buffer warning", func(l logLine) bool {
		return l.level == slog.LevelWarn && strings.Contains(l.msg, "SRT UDP socket buffer smaller than configured")
	})
	if l.attrs["key"] != "srt.socketBuffer" || !strings.Contains(l.attrs["fix"], "sysctl -w net.core.rmem_max=1073741824") {
		t.Errorf("warning attrs %v", l.attrs)
	}
}
