package whep

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/srtwhep/srtwhep/pkg/auth"
)

// DefaultICEStartTimeout is how long an answered offer may go without a
// single ICE check from its viewer before it is closed. A browser starts
// its checks within milliseconds of reading the answer (it has all our
// candidates, we do not trickle), so 2 s covers a slow client and a long
// round trip; an offer that was posted only to hold a slot is gone by then.
const DefaultICEStartTimeout = 2 * time.Second

// errICENotStarted ends a session whose viewer never sent an ICE check.
var errICENotStarted = errors.New("no ICE check from the viewer within the ICE start timeout")

// handshakes counts the offers in flight (POST → connected), in total and
// per client, so that neither one client nor everyone together can hold
// more than their share of the handshake work. The per-client table has
// an entry only while that client has a handshake in flight, so it never
// holds more entries than the total cap.
type handshakes struct {
	total, perClient int

	mu      sync.Mutex
	n       int
	clients map[string]int
}

func newHandshakes(total, perClient int) *handshakes {
	return &handshakes{total: total, perClient: perClient, clients: map[string]int{}}
}

// handshakeRefusal says which cap refused a handshake.
type handshakeRefusal int

const (
	handshakeOK handshakeRefusal = iota
	handshakeServerFull
	handshakeClientFull
)

// acquire takes a slot for client key without waiting.
func (h *handshakes) acquire(key string) handshakeRefusal {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.n >= h.total:
		return handshakeServerFull
	case h.clients[key] >= h.perClient:
		return handshakeClientFull
	}
	h.n++
	h.clients[key]++
	return handshakeOK
}

// release gives back a slot acquire granted to key.
func (h *handshakes) release(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n--
	if h.clients[key]--; h.clients[key] <= 0 {
		delete(h.clients, key)
	}
}

func (h *handshakes) inFlight() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// clients is the size of the per-client table (for tests).
func (h *handshakes) clientCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

// handshakeKey is the client a POST's handshake slot is counted against:
// the address the HTTP listener derived (the real client behind a trusted
// proxy), per /64 for IPv6 like every other per-client limit.
func handshakeKey(r *http.Request) string {
	return auth.Key(auth.ClientOf(r).Addr)
}

// awaitConnected waits until sess is connected and gives its handshake
// slot back whatever the outcome. A viewer that has not sent a single ICE
// check ICEStartTimeout after the answer is closed then: without this an
// offer nobody means to complete would hold its slot for the whole
// handshake timeout. Once checks have arrived the full HandshakeTimeout
// applies, since DTLS and a relayed path may take a while.
func (s *Server) awaitConnected(sess *session) error {
	defer s.handshakes.release(sess.clientKey)
	deadline := time.NewTimer(s.cfg.HandshakeTimeout)
	defer deadline.Stop()
	iceStart := time.NewTimer(s.cfg.ICEStartTimeout)
	defer iceStart.Stop()
	connected := sess.tr.Connected()
	for {
		select {
		case <-connected:
			return nil
		case <-iceStart.C:
			if !sess.tr.ICEStarted() {
				s.stats.handshakeFailures.Add(1)
				return errICENotStarted
			}
		case <-deadline.C:
			s.stats.handshakeFailures.Add(1)
			return errHandshakeTimeout
		case <-sess.ctx.Done():
			if c := context.Cause(sess.ctx); errors.Is(c, errICEFailed) || errors.Is(c, errPCClosed) ||
				errors.Is(c, errHandshakeTimeout) || errors.Is(c, errTransportFailed) {
				s.stats.handshakeFailures.Add(1)
			}
			return context.Cause(sess.ctx)
		}
	}
}
