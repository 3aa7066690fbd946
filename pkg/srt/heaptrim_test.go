package srt

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// TestHeapReturnedOnLeave: a publisher's departure returns the Go heap
// within a tick, and departures inside freeEvery of that return wait for
// the window to end instead of each forcing a GC.
func TestHeapReturnedOnLeave(t *testing.T) {
	var srvp atomic.Pointer[Server]
	started := make(chan *Conn, 4)
	serve, sessions := recordingServe(&srvp, 4096, started)
	r := startServer(t, Config{Serve: serve})
	srvp.Store(r.srv)
	if n := r.srv.frees.Load(); n != 0 {
		t.Fatalf("%d heap returns before any publisher", n)
	}
	leave := func() {
		t.Helper()
		sock, err := dialCaller(r.srv.Addr(), DialConfig{StreamID: "publish:live/h"})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		select {
		case c := <-started:
			c.CloseWith("test leaves")
		case <-time.After(5 * time.Second):
			t.Fatal("publisher never reached Serve")
		}
		waitSession(t, sessions, 5*time.Second)
		closeCaller(sock)
	}
	// first is the last moment the first return had certainly not
	// happened yet (read before the count), so the interval measured
	// from it can only be longer than the real one, however late a
	// loaded machine runs the polls.
	first := time.Now()
	leave()
	testkit.WaitFor(t, 5*time.Second, "a heap return after the departure", func() bool {
		at := time.Now()
		if r.srv.frees.Load() == 1 {
			return true
		}
		first = at
		return false
	})
	leave()
	leave()
	// The two departures wait out freeEvery from the first return and
	// then share one.
	testkit.WaitFor(t, freeEvery+5*time.Second, "the deferred heap return", func() bool { return r.srv.frees.Load() >= 2 })
	// A lower bound that lateness cannot break: the second return came at
	// least freeEvery after the first was decided, which was at most one
	// forced GC before first; a tick of margin covers that GC.
	took := time.Since(first)
	t.Logf("second heap return within %v of the first (freeEvery %v)", took.Round(10*time.Millisecond), freeEvery)
	if took < freeEvery-trimEvery {
		t.Errorf("second return %v after the first, want at least freeEvery (%v)", took, freeEvery)
	}
}
