package srt

/*
#include <malloc.h>
*/
import "C"

import (
	"runtime/debug"
	"time"
)

// A handshake that passes the listen callback and then fails (a wrong
// passphrase) still makes libsrt build a whole socket: receive buffer,
// loss lists sized by the flow window, about 400 KB. libsrt frees it a
// second or so later, but glibc keeps the freed pages in its arenas, so a
// flood of 100 such handshakes a second left RSS 100 MB higher after 3 s
// and never gave it back (measured in internal/hostile's
// TestSRTHandshakeFlood; MALLOC_ARENA_MAX and a fixed mmap threshold did
// not change it, malloc_trim did). A publisher leaving frees its 12 MB
// receive buffer the same way. So after handshakes or departures, the
// server trims the C heap once a second for a few seconds, while libsrt's
// collector catches up; an idle server or one that only streams never
// trims.
//
// The Go heap has the same problem at a publisher's departure: its GOP
// cache (up to gopCacheBytes, 32 MB), the demuxer's and the packetizer's
// buffers become garbage at once, but the next GC may be minutes away on
// a server that then idles (the heap goal was set while they were live),
// and the scavenger gives the freed pages back only gradually. Measured in
// internal/hostile's TestMemoryReturnedOnLeave: without a forced return,
// anonymous RSS was still 8.5 MB (no viewer) and 15.5 MB (a viewer kept
// for publisherGrace) above the baseline 5 s after a 21 MB GOP left; with
// it, 5 to 10 MB (what is left is live: the server's own state and the
// viewer's queue still playing out). So a
// publisher's departure also returns the Go heap (debug.FreeOSMemory: one
// GC and a scavenge), at most once per freeEvery, so a publisher flapping
// or a crowd leaving costs one forced GC, not one each.
const (
	trimEvery = time.Second
	freeEvery = 5 * time.Second
	// trimRounds is how many ticks after the last churn still trim:
	// libsrt's collector frees a closed socket one to two seconds later.
	trimRounds = 3
)

// churned notes a handshake or a departure; it may run on a libsrt thread.
func (s *Server) churned() { s.churn.Add(1) }

// publisherLeft notes a publisher's departure, after its path let go of
// what it held.
func (s *Server) publisherLeft() { s.left.Store(true) }

// trimLoop runs on Run's goroutine group until stop is closed.
func (s *Server) trimLoop(stop <-chan struct{}) {
	t := time.NewTicker(trimEvery)
	defer t.Stop()
	rounds := 0
	var freed time.Time
	pending := false
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if s.left.Swap(false) {
			pending = true
		}
		// A departure inside freeEvery waits for its turn rather than
		// being forgotten.
		if pending && time.Since(freed) >= freeEvery {
			pending, freed = false, time.Now()
			debug.FreeOSMemory()
			s.frees.Add(1)
		}
		if s.churn.Swap(0) > 0 {
			rounds = trimRounds
		}
		if rounds == 0 {
			continue
		}
		rounds--
		C.malloc_trim(0)
		s.trims.Add(1)
	}
}
