// Package recent is a bounded, time-limited memory of keys, each with a
// value: what happened within the last window, never more than max of
// it. pkg/whep keeps the sessions that ended in the last minute in one,
// so a repeated DELETE is answered 200.
package recent

import (
	"sync"
	"time"
)

// Set is a FIFO, since keys enter in the order they happen and expire
// in the same order. Past max the oldest is forgotten early, so a churn
// (a load test, a scan) cannot grow it.
type Set struct {
	window time.Duration
	max    int
	// Now is the clock; New sets time.Now, tests their own.
	Now func() time.Time

	mu     sync.Mutex
	values map[string]string // key → value
	order  []entry           // oldest first
}

type entry struct {
	key string
	at  time.Time
}

// New remembers at most max keys, each for window.
func New(window time.Duration, max int) *Set {
	return &Set{window: window, max: max, Now: time.Now, values: make(map[string]string)}
}

// Add records key with value now; a key already remembered keeps its
// first value and time.
func (e *Set) Add(key, value string) {
	now := e.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expire(now)
	if _, ok := e.values[key]; ok {
		return
	}
	for len(e.order) >= e.max {
		e.drop()
	}
	e.values[key] = value
	e.order = append(e.order, entry{key: key, at: now})
}

// Has reports whether key was added with value within the window.
func (e *Set) Has(key, value string) bool {
	now := e.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expire(now)
	v, ok := e.values[key]
	return ok && v == value
}

// Len is how many keys it remembers.
func (e *Set) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.order)
}

func (e *Set) expire(now time.Time) {
	for len(e.order) > 0 && now.Sub(e.order[0].at) >= e.window {
		e.drop()
	}
}

func (e *Set) drop() {
	delete(e.values, e.order[0].key)
	e.order[0] = entry{}
	// Slicing off the front shrinks the capacity too, so the next append
	// past it copies only the live entries: memory stays within twice max.
	e.order = e.order[1:]
}
