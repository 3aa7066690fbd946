package whep

import (
	"github.com/pion/rtcp"
	"github.com/pion/webrtc/v4"
)

// sayGoodbye tells a connected viewer that its media ends, with an RTCP
// BYE for the session's SSRCs (RFC 3550 §6.6), before the PeerConnection
// closes and sends DTLS close_notify. Without either, a browser whose
// session the server ended keeps showing "connected" and a frozen picture
// until ICE gives up on its own, seconds later, and only then retries.
func (sess *session) sayGoodbye() {
	if webrtc.PeerConnectionState(sess.state.Load()) != webrtc.PeerConnectionStateConnected {
		return // never connected, or already failed or closed: nobody listens
	}
	var ssrcs []uint32
	for _, sender := range []*webrtc.RTPSender{sess.sender, sess.audioSender} {
		if sender == nil {
			continue
		}
		for _, enc := range sender.GetParameters().Encodings {
			ssrcs = append(ssrcs, uint32(enc.SSRC))
		}
	}
	if len(ssrcs) == 0 {
		return
	}
	// A failed write means the transport is already going away, which is
	// what the BYE was going to announce.
	_ = sess.pc.WriteRTCP([]rtcp.Packet{&rtcp.Goodbye{Sources: ssrcs, Reason: "session ended"}})
}
