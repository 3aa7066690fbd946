package whep

import (
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/pkg/bwe"
)

type serverCounters struct {
	opened            atomic.Uint64
	handshakeFailures atomic.Uint64
	// packets and bytes of sessions that have ended; live sessions add
	// their own counters in Stats.
	closedPackets atomic.Uint64
	closedBytes   atomic.Uint64
	rejected      [len(rejectReasons)]atomic.Uint64
}

type rejectReason int

// Why offers are refused; the names are the metrics' reason labels.
const (
	// noReject is a refusal no reason counts (the server is not serving,
	// an internal error).
	noReject rejectReason = iota - 1
	rejectReaderCap
	rejectServerFull
	rejectNoPublisher
	rejectBadOffer
	rejectAuth
	rejectHandshakeLimit
	rejectOfferRate
	rejectPendingLimit
)

var rejectReasons = [...]string{
	rejectReaderCap:      "reader_cap",
	rejectServerFull:     "server_full",
	rejectNoPublisher:    "no_publisher",
	rejectBadOffer:       "bad_offer",
	rejectAuth:           "auth",
	rejectHandshakeLimit: "handshake_limit",
	rejectOfferRate:      "offer_rate",
	rejectPendingLimit:   "pending_limit",
}

func (c *serverCounters) reject(r rejectReason) {
	if r != noReject {
		c.rejected[r].Add(1)
	}
}

// Stats is a snapshot for metrics.
type Stats struct {
	Sessions           int    // sessions open now (any state)
	HandshakesInFlight int    // viewers whose ICE has started, not yet connected
	PendingOffers      int    // offers answered whose viewer has not started ICE
	SessionsOpened     uint64 // 201s sent
	HandshakeFailures  uint64 // answered sessions that never connected
	PacketsSent        uint64
	BytesSent          uint64 // RTP payload + header bytes handed to the connections
	// Rejected counts refused offers by reason (reader_cap, server_full,
	// no_publisher, bad_offer, auth, handshake_limit, offer_rate,
	// pending_limit). handshake_limit counts viewers closed because no
	// DTLS slot was free when their ICE started: they had their 201.
	Rejected map[string]uint64
	// StateCounts counts open sessions by state ("connecting", "connected").
	StateCounts map[string]int
}

// SessionInfo describes one viewer.
type SessionInfo struct {
	ID          string
	Path        string
	Remote      string
	State       string // new, connecting, connected, failed, closed (pion's PeerConnectionState names)
	Since       time.Time
	PacketsSent uint64
	BytesSent   uint64
	Dropped     uint64 // access units the hub discarded for this viewer, when it reports them
	// Estimate is the viewer's bandwidth estimate (zero before its sender
	// starts); Started is when its sender started, the origin of
	// Estimate.SinceDecrease.
	Estimate bwe.Estimate
	Started  time.Time
}

// Sessions lists the open sessions.
func (s *Server) Sessions() []SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SessionInfo, 0, len(s.sessions))
	for _, sess := range s.sessions {
		out = append(out, sess.info())
	}
	return out
}

// KickSession closes a session; false when it does not exist.
func (s *Server) KickSession(id string) bool {
	sess := s.removeSession(id)
	if sess == nil {
		return false
	}
	sess.cancel(errKicked)
	return true
}

// Stats returns counters for metrics.
func (s *Server) Stats() Stats {
	st := Stats{
		HandshakesInFlight: s.admission.Handshakes.InFlight(),
		PendingOffers:      s.admission.Pending.InFlight(),
		SessionsOpened:     s.stats.opened.Load(),
		HandshakeFailures:  s.stats.handshakeFailures.Load(),
		PacketsSent:        s.stats.closedPackets.Load(),
		BytesSent:          s.stats.closedBytes.Load(),
	}
	st.Rejected = make(map[string]uint64, len(rejectReasons))
	for i, name := range rejectReasons {
		st.Rejected[name] = s.stats.rejected[i].Load()
	}
	st.StateCounts = map[string]int{}
	s.mu.Lock()
	st.Sessions = len(s.sessions)
	for _, sess := range s.sessions {
		packets, bytes := sess.sent()
		st.PacketsSent += packets
		st.BytesSent += bytes
		st.StateCounts[sess.info().State]++
	}
	s.mu.Unlock()
	return st
}
