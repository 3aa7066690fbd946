package whep

import (
	"sync"
	"time"
)

// A DELETE may race the session's own end (the publisher left, ICE
// failed) or be retried by a client whose first DELETE's answer was lost;
// either way the session is gone as the client wants, so it gets 200, not
// a 404 that reads like a wrong URL. The ids of sessions ended within
// endedWindow are kept for that, at most endedMax of them.
const (
	endedWindow = time.Minute
	endedMax    = 4096
)

// endedSessions is a bounded, time-limited set of recently ended session
// ids with their paths: a FIFO, since ids enter in the order they end and
// expire in the same order. Past max the oldest is forgotten early, so a
// churn of sessions (a load test, a scan) cannot grow it.
type endedSessions struct {
	window time.Duration
	max    int
	now    func() time.Time

	mu    sync.Mutex
	paths map[string]string // id → path
	order []endedEntry      // oldest first
}

type endedEntry struct {
	id string
	at time.Time
}

func newEndedSessions(window time.Duration, max int) *endedSessions {
	return &endedSessions{window: window, max: max, now: time.Now, paths: make(map[string]string)}
}

// add records that session id on path ended now.
func (e *endedSessions) add(id, path string) {
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expire(now)
	if _, ok := e.paths[id]; ok {
		return
	}
	for len(e.order) >= e.max {
		e.drop()
	}
	e.paths[id] = path
	e.order = append(e.order, endedEntry{id: id, at: now})
}

// ended reports whether session id on path ended within the window.
func (e *endedSessions) ended(id, path string) bool {
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expire(now)
	p, ok := e.paths[id]
	return ok && p == path
}

func (e *endedSessions) len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.order)
}

func (e *endedSessions) expire(now time.Time) {
	for len(e.order) > 0 && now.Sub(e.order[0].at) >= e.window {
		e.drop()
	}
}

func (e *endedSessions) drop() {
	delete(e.paths, e.order[0].id)
	e.order[0] = endedEntry{}
	// Slicing off the front shrinks the capacity too, so the next append
	// past it copies only the live entries: memory stays within twice max.
	e.order = e.order[1:]
}
