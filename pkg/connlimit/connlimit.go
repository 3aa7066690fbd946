// Package connlimit counts open connections per client and in total
// against two caps, for the listeners that must not let one client's
// sockets keep everyone else out (HTTP, ICE-TCP). Callers key clients
// (auth.Key) and write their own log lines from the refusals it
// summarises.
package connlimit

import (
	"net"
	"sync"
	"time"
)

// Table is the count. It holds one entry per client with an open
// connection, so the total cap bounds it.
type Table struct {
	perClient, total int
	every            time.Duration
	// Now is the clock of the refusal summaries; tests replace it.
	Now func() time.Time

	mu            sync.Mutex
	open          int
	clients       map[string]*client
	totalRefused  int // since the last summary
	totalLoggedAt time.Time
}

type client struct {
	open     int
	refused  int // since the last summary
	loggedAt time.Time
}

// New caps connections at perClient per client and total in all, with
// at most one refusal summary per client (and one for the total) every
// interval.
func New(perClient, total int, every time.Duration) *Table {
	return &Table{perClient: perClient, total: total, every: every, Now: time.Now, clients: map[string]*client{}}
}

// Refusal is why Admit refused a connection and whether a summary is
// due: Refused connections of the client (or over the total) since the
// last one, Open of them open now.
type Refusal struct {
	OverTotal     bool
	Due           bool
	Open, Refused int
}

// Admit counts a new connection of key ("" for a peer only the total
// applies to), or refuses it.
func (t *Table) Admit(key string) (bool, Refusal) {
	now := t.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	cl := t.clients[key]
	switch {
	case t.open >= t.total:
		t.totalRefused++
		r := Refusal{OverTotal: true, Open: t.open}
		if now.Sub(t.totalLoggedAt) >= t.every {
			r.Due, r.Refused = true, t.totalRefused
			t.totalRefused, t.totalLoggedAt = 0, now
		}
		return false, r
	case key != "" && cl != nil && cl.open >= t.perClient:
		cl.refused++
		r := Refusal{Open: cl.open}
		if now.Sub(cl.loggedAt) >= t.every {
			r.Due, r.Refused = true, cl.refused
			cl.refused, cl.loggedAt = 0, now
		}
		return false, r
	}
	t.open++
	if key != "" {
		if cl == nil {
			cl = &client{}
			t.clients[key] = cl
		}
		cl.open++
	}
	return true, Refusal{}
}

// Release gives back a slot Admit counted for key.
func (t *Table) Release(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open--
	if cl := t.clients[key]; cl != nil {
		if cl.open--; cl.open <= 0 {
			delete(t.clients, key)
		}
	}
}

// Open is the number of connections counted now.
func (t *Table) Open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.open
}

// Clients is the number of clients with a connection counted.
func (t *Table) Clients() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.clients)
}

// ClientOpen is the number of key's connections counted now.
func (t *Table) ClientOpen(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cl := t.clients[key]; cl != nil {
		return cl.open
	}
	return 0
}

// Refuse closes a connection over a cap. A TCP one is reset rather than
// closed with a FIN, which leaves no TIME_WAIT socket behind for each
// connection of a flood (the kernel completed the handshake already, so
// closing is the only answer left).
func Refuse(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
