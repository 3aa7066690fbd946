package mediaplane

import "sync/atomic"

// Stats counts what the Server read and sent, for metrics and tests. Every
// datagram read is either handled (a STUN check answered, a DTLS record
// delivered, RTCP decrypted) or dropped under exactly one reason.
type Stats struct {
	Datagrams uint64 // read from the socket

	STUNAnswered uint64 // binding requests answered (ICE checks, consent)
	DTLSRecords  uint64 // DTLS datagrams taken by a handshake or its aftermath
	// ForgedAlerts is the part of DTLSRecords that looked like an alert
	// after the handshake but did not authenticate (alert.go): ignored.
	ForgedAlerts uint64
	RTCPPackets  uint64 // SRTCP datagrams decrypted and handed to a viewer
	// ConsentAnswers are answers to our own checks that proved an
	// address (RFC 7675; consent.go).
	ConsentAnswers uint64

	DroppedMalformed    uint64 // no known protocol, or a truncated or unparsable one
	DroppedUnknownUfrag uint64 // STUN for no viewer, or for a stale ICE generation
	DroppedBadIntegrity uint64 // STUN whose MESSAGE-INTEGRITY or FINGERPRINT failed
	DroppedUnknownAddr  uint64 // DTLS or RTP/RTCP from an address no check validated
	DroppedBadSRTCP     uint64 // SRTCP that failed authentication or replay checks
	DroppedOther        uint64 // valid but unwanted: RTP from a viewer, STUN other than a request, a full handshake queue

	PacketsSent uint64 // media datagrams (and ICE-TCP frames) handed to the kernel
	Messages    uint64 // sendmmsg entries that carried them (GSO groups)
	Syscalls    uint64 // sendmmsg calls
	SendErrors  uint64 // datagrams the kernel refused

	// ConsentFailures are nominated addresses that never answered our
	// checks (so got no media), and viewers whose media address stopped
	// answering for the consent timeout (so were ended).
	ConsentFailures uint64
	// ICE-TCP connections closed at accept, over Config.MaxTCPPerClient
	// from one client or over plane.MaxTCPConns in all.
	TCPRefusedPerClient, TCPRefusedGlobal uint64
	// TCPEvicted counts validated ICE-TCP connections closed because a
	// newer address of the same viewer took their place in its table.
	TCPEvicted uint64
}

type counters struct {
	datagrams, stunAnswered, dtlsRecords, rtcpPackets            atomic.Uint64
	malformed, unknownUfrag, badIntegrity, unknownAddr, badSRTCP atomic.Uint64
	droppedOther                                                 atomic.Uint64
	consentAnswers, consentFailures                              atomic.Uint64
	packetsSent, messages, syscalls, sendErrors                  atomic.Uint64
	tcpEvicted, forgedAlerts                                     atomic.Uint64
}

// Stats returns the counters so far.
func (s *Server) Stats() Stats {
	c := &s.stats
	perClient, global := s.tcpLimit.Refused()
	return Stats{
		TCPRefusedPerClient: perClient,
		TCPRefusedGlobal:    global,

		Datagrams:    c.datagrams.Load(),
		STUNAnswered: c.stunAnswered.Load(),
		DTLSRecords:  c.dtlsRecords.Load(),
		ForgedAlerts: c.forgedAlerts.Load(),
		RTCPPackets:  c.rtcpPackets.Load(),

		ConsentAnswers: c.consentAnswers.Load(),

		DroppedMalformed:    c.malformed.Load(),
		DroppedUnknownUfrag: c.unknownUfrag.Load(),
		DroppedBadIntegrity: c.badIntegrity.Load(),
		DroppedUnknownAddr:  c.unknownAddr.Load(),
		DroppedBadSRTCP:     c.badSRTCP.Load(),
		DroppedOther:        c.droppedOther.Load(),

		PacketsSent: c.packetsSent.Load(),
		Messages:    c.messages.Load(),
		Syscalls:    c.syscalls.Load(),
		SendErrors:  c.sendErrors.Load(),

		ConsentFailures: c.consentFailures.Load(),
		TCPEvicted:      c.tcpEvicted.Load(),
	}
}
