package pionplane

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/plane"
)

// TestTCPRefusedCounts: connections past webrtc.maxTCPPerClient reach
// the pion plane's real ICE-TCP listener, are reset there, and move the
// counts the metrics export.
func TestTCPRefusedCounts(t *testing.T) {
	p, err := New(plane.Config{UDPListen: "127.0.0.1:0", TCPListen: "127.0.0.1:0", MaxTCPPerClient: 1})
	if err != nil {
		t.Fatal(err)
	}
	if pc, g := p.TCPRefused(); pc != 0 || g != 0 {
		t.Fatalf("refused %d per client, %d global before Start; want 0, 0", pc, g)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	// pion's mux holds the first connection while it waits for a STUN
	// binding (30 s), so it keeps the client's one slot for the test.
	const dials = 4
	for range dials {
		c, err := net.Dial("tcp", p.TCPAddr())
		if errors.Is(err, syscall.ECONNRESET) {
			continue // a refused connection's reset may come before connect returns
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		pc, g := p.TCPRefused()
		if pc == dials-1 && g == 0 {
			return
		}
		if pc > dials-1 || g != 0 || time.Now().After(deadline) {
			t.Fatalf("refused %d per client, %d global after %d connections from one client with a cap of 1; want %d, 0", pc, g, dials, dials-1)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
