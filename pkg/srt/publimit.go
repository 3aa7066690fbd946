package srt

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/srtwhep/srtwhep/pkg/auth"
)

// Publisher connections are capped in total and per client address, in
// the listen callback, before anything is kept for the connection: each
// one costs a goroutine, libsrt buffers and, until its program tables
// arrive, buffered bytes, and before the caps one address could open as
// many as libsrt let it. The caps count accepted publishers, not
// handshake records: a record may belong to a handshake that then fails
// (a wrong passphrase), and a flood of those must not lock an address's
// encoder out. Handshakes completed in a burst between the callback and
// Accept (at most libsrt's backlog) are counted and closed at Accept.
// Readers and edge pulls have their own limits.
const (
	// DefaultMaxPublishers is the cap on publisher connections at once.
	DefaultMaxPublishers = 100
	// DefaultMaxPublishersPerIP is the cap per client address (per /64
	// for IPv6): an encoder rack behind one NAT pushes a few streams, an
	// address opening hundreds is an attack.
	DefaultMaxPublishersPerIP = 10
)

// ErrTooManyPublishers refuses a publisher past a cap (overload, 1402).
type ErrTooManyPublishers struct {
	PerIP bool
	Limit int
}

func (e ErrTooManyPublishers) Error() string {
	if e.PerIP {
		return fmt.Sprintf("%d publisher connections from this address already (srt.maxPublishersPerIP); close one or raise the limit", e.Limit)
	}
	return fmt.Sprintf("%d publisher connections already (srt.maxPublishers); retry later or raise the limit", e.Limit)
}

// publisherKey is what the per-address cap counts by.
func publisherKey(peer *net.UDPAddr) string {
	if peer == nil {
		return "unknown"
	}
	ip, ok := netip.AddrFromSlice(peer.IP)
	if !ok {
		return "unknown"
	}
	return auth.Key(ip)
}

// checkPublisherLocked refuses a publisher past a cap; under s.mu, after
// the expired handshake records were swept.
func (s *Server) checkPublisherLocked(key string) error {
	if s.pubsAll >= s.maxPubs {
		return ErrTooManyPublishers{Limit: s.maxPubs}
	}
	if s.pubs[key] >= s.maxPubsPerIP {
		return ErrTooManyPublishers{PerIP: true, Limit: s.maxPubsPerIP}
	}
	return nil
}

// countPublisherLocked adds d to key's publishers; under s.mu. The key
// "" (not a counted publisher) is ignored.
func (s *Server) countPublisherLocked(key string, d int) {
	if key == "" {
		return
	}
	s.pubsAll += d
	if n := s.pubs[key] + d; n > 0 {
		s.pubs[key] = n
	} else {
		delete(s.pubs, key)
	}
}

// Publishers is the number of publisher connections counted against the
// caps.
func (s *Server) Publishers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pubsAll
}
