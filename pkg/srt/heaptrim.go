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
// The Go heap has a smaller form of the same problem at a publisher's
// departure: its GOP cache (up to gopCacheBytes, 32 MB), the demuxer's and
// the packetizer's buffers become garbage at once, and the scavenger gives
// the freed pages back only gradually (about 3 MB of freed heap was still
// not returned 10 s after a 21 MB GOP left). Measured in internal/hostile's
// TestMemoryReturnedOnLeave (two runs without, four with), 5 s after that
// departure anonymous RSS was 8.5 to 11.5 MB (no viewer) and 15.5 to
// 16.6 MB (a viewer kept for publisherGrace) above the baseline without a
// forced return, 3 to 8 MB and 9 to 10 MB with it (what is left is live:
// the server's own state, the viewer's queue still playing out). RSS was
// within 32 MB of the baseline after 0.4 to 2.3 s either way. So a
// publisher's departure also returns the Go heap
// (debug.FreeOSMemory: one GC and a scavenge), at most once per freeEvery,
// so a publisher flapping or a crowd leaving costs one forced GC, not one
// each.
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
