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

	"github.com/srtwhep/srtwhep/pkg/lograte"
)

// Table is the count. It holds one entry per client with an open
// connection, so the total cap bounds it.
type Table struct {
	perClient, total int
	// Now is the clock of the refusal summaries; tests replace it.
	Now func() time.Time
	// Extra, when set, raises a client's cap above perClient (a crowd
	// behind one address that has proven its viewers). It is called
	// outside the table's lock.
	Extra func(key string) int
	// refusals spaces the summaries: per client, and one kind for the
	// total. No summary function: the count is the caller's to log, in
	// the next Refusal that is Due.
	refusals *lograte.Limiter[refusalKind, struct{}]

	mu      sync.Mutex
	open    int
	clients map[string]*client
}

type client struct{ open int }

// refusalKind is a client's refusals, or with overTotal those over the
// total (client ""). The zero value is lograte's shared entry.
type refusalKind struct {
	overTotal bool
	client    string
}

// New caps connections at perClient per client and total in all, with
// at most one refusal summary per client (and one for the total) every
// interval.
func New(perClient, total int, every time.Duration) *Table {
	t := &Table{perClient: perClient, total: total, Now: time.Now, clients: map[string]*client{}}
	// Only clients at their cap are refused, so at most total/perClient
	// of them at a time, besides the total's kind and the shared one.
	t.refusals = lograte.New[refusalKind, struct{}](every, total/max(perClient, 1)+2, nil)
	t.refusals.Now = func() time.Time { return t.Now() }
	return t
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
	limit := t.perClient
	if t.Extra != nil && key != "" {
		limit += max(t.Extra(key), 0)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	cl := t.clients[key]
	switch {
	case t.open >= t.total:
		n := t.refusals.Note(refusalKind{overTotal: true}, struct{}{})
		return false, Refusal{OverTotal: true, Open: t.open, Due: n > 0, Refused: n}
	case key != "" && cl != nil && cl.open >= limit:
		n := t.refusals.Note(refusalKind{client: key}, struct{}{})
		return false, Refusal{Open: cl.open, Due: n > 0, Refused: n}
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
