package mediaplane

import (
	"testing"

	"github.com/srtwhep/srtwhep/pkg/plane"
)

// TestSocketStatsBeforeStart: the metrics read the socket's counters from
// the plane itself, and a scrape may come before the plane has bound it.
func TestSocketStatsBeforeStart(t *testing.T) {
	p, err := NewPlane(plane.Config{UDPListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if datagrams, refused, drops := p.SocketStats(); datagrams != 0 || refused != 0 || drops != 0 {
		t.Fatalf("before Start: %d datagrams, %d refused, %d receive drops; want none", datagrams, refused, drops)
	}
}
