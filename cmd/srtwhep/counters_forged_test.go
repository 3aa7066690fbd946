package main

// The media-plane half of TestCountersMove: datagrams forged to move each
// drop reason, and a viewer dropped for want of a handshake slot.

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pion/stun/v4"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// forgeDatagrams sends the own media plane, from a socket of the test's,
// a datagram for each reason it drops one: junk, RTCP from an address no
// ICE check validated, checks for no viewer and with a wrong password, a
// STUN response nobody asked for and, once a correct check has validated
// the socket for a connected viewer of live/m, SRTCP with a forged tag;
// then a nomination of that socket, which never answers consent checks.
func forgeDatagrams(t *testing.T, ts *testServer, w *counterWatch) {
	t.Helper()
	// A viewer whose ICE credentials the test knows: its offer and our
	// answer carry them.
	free := ts.slotsFree
	testkit.WaitFor(t, 15*time.Second, "a free handshake slot", free)
	offer := testkit.Offer(t, testkit.OfferOptions{Codecs: h264Only})
	code, _, answer := request(t, http.MethodPost, ts.httpURL("/live/m/whep"), "", "application/sdp", offer.SDP)
	if code != http.StatusCreated {
		t.Fatalf("POST live/m: %d %q", code, answer)
	}
	if err := offer.PC.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 15*time.Second, "the viewer to connect", func() bool {
		return offer.PC.ConnectionState() == webrtc.PeerConnectionStateConnected
	})
	testkit.WaitFor(t, 15*time.Second, "the server to see the viewer connected", free)
	ice := testkit.NewICECheck(t, offer.SDP, answer)
	check := func(pwd string) []byte {
		c := ice
		c.Password = pwd
		return c.Build(t).Raw
	}

	conn, err := net.Dial("udp4", ts.addrs.Load().WebRTCUDP)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// send repeats b until the reason's counter grows: loopback may drop
	// a datagram too.
	send := func(reason string, b []byte) {
		t.Helper()
		before, _ := testkit.Series(w.scrape(t), "srtwhep_webrtc_received_dropped_total", "reason", reason)
		testkit.WaitFor(t, 15*time.Second, "a datagram dropped as "+reason, func() bool {
			if _, err := conn.Write(b); err != nil {
				t.Fatal(err)
			}
			v, _ := testkit.Series(w.scrape(t), "srtwhep_webrtc_received_dropped_total", "reason", reason)
			return v > before
		})
	}
	// A receiver report's header and SSRC, then a made-up SRTCP index and
	// authentication tag.
	srtcp := append([]byte{0x80, 201, 0, 1, 1, 2, 3, 4}, make([]byte, 14)...)
	srtcp[8] = 0x80

	send("malformed", []byte{0xff})
	send("unknown_addr", srtcp)
	send("unknown_ufrag", stun.MustBuild(stun.TransactionID, stun.BindingRequest,
		stun.NewUsername("nobody:nobody"), stun.Fingerprint).Raw)
	send("other", stun.MustBuild(stun.TransactionID, stun.BindingSuccess).Raw)
	send("bad_integrity", check("not the password"))

	good := ice.Build(t).Raw
	resp := make([]byte, 1500)
	testkit.WaitFor(t, 15*time.Second, "an answer to a valid ICE check", func() bool {
		if _, err := conn.Write(good); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		n, err := conn.Read(resp)
		m := &stun.Message{Raw: resp[:n]}
		return err == nil && m.Decode() == nil && m.Type == stun.BindingSuccess
	})
	send("bad_srtcp", srtcp)

	// The viewer's own credentials nominate the test's socket, which never
	// answers the server's consent checks: no media, one consent failure.
	ice.Nominate = true
	nominate := ice.Build(t).Raw
	if _, err := conn.Write(nominate); err != nil {
		t.Fatal(err)
	}
	w.waitAbove(t, "srtwhep_webrtc_consent_failures_total")
}

// dropAtICEStart makes the own plane's server close a viewer whose ICE
// starts while the only handshake slot is taken (handshake_limit). The
// slot is held by an offer whose ICE check the test sends itself and
// which never starts DTLS, until the handshake timeout fails it.
func dropAtICEStart(t *testing.T, ts *testServer, w *counterWatch) {
	t.Helper()
	testkit.WaitFor(t, 15*time.Second, "free slots", ts.slotsFree)
	holder := testkit.Offer(t, testkit.OfferOptions{Codecs: h264Only})
	_ = holder.PC.Close()
	code, _, answer := request(t, http.MethodPost, ts.httpURL("/live/m/whep"), "", "application/sdp", holder.SDP)
	if code != http.StatusCreated {
		t.Fatalf("POST live/m: %d %q", code, answer)
	}
	conn, err := net.Dial("udp4", ts.addrs.Load().WebRTCUDP)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	good := testkit.NewICECheck(t, holder.SDP, answer).Build(t).Raw
	testkit.WaitFor(t, 15*time.Second, "the ICE check to take the handshake slot", func() bool {
		if _, err := conn.Write(good); err != nil {
			t.Fatal(err)
		}
		st := ts.whep.Stats()
		return st.HandshakesInFlight == 1 && st.PendingOffers == 0
	})
	// From another address: the holder's own address may not have a
	// second offer waiting while its handshake is under way (its share of
	// unconnected offers, refused at the POST), so only the server-wide
	// handshake cap can close this one when its ICE starts.
	v := testkit.Offer(t, testkit.OfferOptions{Codecs: h264Only})
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 78)}}
	other := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	resp, err := other.Post(ts.httpURL("/live/m/whep"), "application/sdp", strings.NewReader(v.SDP))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if answer = string(body); resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST live/m from 127.0.0.78: %d %q", resp.StatusCode, answer)
	}
	if err := v.PC.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		t.Fatal(err)
	}
	w.waitAbove(t, "srtwhep_webrtc_rejected_total", "reason", "handshake_limit")
	_ = v.PC.Close()
	testkit.WaitFor(t, 15*time.Second, "the holder's handshake to time out", ts.slotsFree)
}
