package pionplane

import (
	"github.com/pion/rtcp"
	"github.com/pion/webrtc/v4"
)

// sayGoodbye tells a connected viewer that its media ends, with an RTCP
// BYE for the session's SSRCs (RFC 3550 §6.6), before the PeerConnection
// closes and sends DTLS close_notify. Without either, a browser whose
// session the server ended keeps showing "connected" and a frozen picture
// until ICE gives up on its own, seconds later, and only then retries.
// (The own media plane's viewers get both from mediaplane.Viewer.Close.)
func (t *conn) sayGoodbye() {
	if webrtc.PeerConnectionState(t.st.Load()) != webrtc.PeerConnectionStateConnected {
		return // never connected, or already failed or closed: nobody listens
	}
	var ssrcs []uint32
	for _, ssrc := range []uint32{senderSSRC(t.sender), senderSSRC(t.audioSender)} {
		if ssrc != 0 {
			ssrcs = append(ssrcs, ssrc)
		}
	}
	if len(ssrcs) == 0 {
		return
	}
	// A failed write means the transport is already going away, which is
	// what the BYE was going to announce.
	_ = t.pc.WriteRTCP([]rtcp.Packet{&rtcp.Goodbye{Sources: ssrcs, Reason: "session ended"}})
}
