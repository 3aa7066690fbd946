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
	leave()
	testkit.WaitFor(t, 5*time.Second, "a heap return after the departure", func() bool { return r.srv.frees.Load() == 1 })
	first := time.Now()
	leave()
	leave()
	// The two departures wait out freeEvery from the first return and
	// then share one.
	testkit.WaitFor(t, freeEvery+5*time.Second, "the deferred heap return", func() bool { return r.srv.frees.Load() >= 2 })
	if took := time.Since(first); took < freeEvery-trimEvery {
		t.Errorf("second return %v after the first, want at least freeEvery (%v)", took, freeEvery)
	}
}
