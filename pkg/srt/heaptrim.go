package srt

/*
#include <malloc.h>
*/
import "C"

import (
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
const (
	trimEvery = time.Second
	// trimRounds is how many ticks after the last churn still trim:
	// libsrt's collector frees a closed socket one to two seconds later.
	trimRounds = 3
)

// churned notes a handshake or a departure; it may run on a libsrt thread.
func (s *Server) churned() { s.churn.Add(1) }

// trimLoop runs on Run's goroutine group until stop is closed.
func (s *Server) trimLoop(stop <-chan struct{}) {
	t := time.NewTicker(trimEvery)
	defer t.Stop()
	rounds := 0
	for {
		select {
		case <-stop:
			return
		case <-t.C:
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
