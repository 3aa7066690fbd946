package loadgen

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// TestPoolPins: with Pin, every PinEvery-th session POSTs its layer
// selection once connected, so two of four viewers end up on the 360p
// rendition, as the server's metrics count them; a selection the server
// refuses fails the session with the server's answer.
func TestPoolPins(t *testing.T) {
	srv := startTestServer(t)
	// A session's layers are those the path has when it opens: wait for
	// the path's ladder, whose rungs the metrics list once it is known.
	testkit.WaitFor(t, 15*time.Second, "live/bench's 360p rendition in the metrics", func() bool {
		_, ok := testkit.Metric(t, srv.Srv.Addrs.Metrics, "srtwhep_rendition_running", "path", "live/bench", "rendition", "360p")
		return ok
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool, err := NewPool(Config{URL: srv.WHEP, Pin: `{"maxHeight":360}`, PinEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if added, _ := pool.Grow(ctx, 4, 20); added != 4 {
		fails, _ := pool.Failures()
		t.Fatalf("%d of 4 sessions opened: %v", added, fails)
	}
	onRendition := func() float64 {
		v, _ := testkit.Metric(t, srv.Srv.Addrs.Metrics, "srtwhep_rendition_viewers", "path", "live/bench", "rendition", "360p")
		return v
	}
	testkit.WaitFor(t, 20*time.Second, "two viewers on the 360p rendition", func() bool { return onRendition() == 2 })

	bad, err := NewPool(Config{URL: srv.WHEP, Pin: `{"maxHeight":"tall"}`})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if added, failed := bad.Grow(ctx, 1, 20); added != 0 || failed != 1 {
		t.Fatalf("a refused selection: %d sessions opened, %d failed; want the session failed", added, failed)
	}
	fails, _ := bad.Failures()
	if !strings.Contains(fmt.Sprint(fails), "400") {
		t.Errorf("a refused selection failed with %v, want the server's 400", fails)
	}
	if v := onRendition(); v != 2 {
		t.Errorf("%v viewers on the 360p rendition after the refused one, want still 2", v)
	}
}
