package mediaplane

import (
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/dtls/v3"
	"github.com/pion/stun/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// TestMalformedInput: garbage of every class, STUN with a bad integrity,
// for an unknown ufrag or without USERNAME, and DTLS or RTCP from an
// address no check validated are each dropped under their reason; the
// server still answers a valid check afterwards.
func TestMalformedInput(t *testing.T) {
	srv, _ := newServer(t, nil)
	p := newRawPeer(t, srv)
	vc := h264Codec
	var iceStarts atomic.Int32
	vc.OnICEStart = func() { iceStarts.Add(1) }
	v := p.join(srv, vc)
	stranger := newRawPeer(t, srv)

	noUser, _ := stun.Build(stun.TransactionID, stun.BindingRequest, stun.Fingerprint)
	indication, _ := stun.Build(stun.TransactionID, stun.NewType(stun.MethodBinding, stun.ClassIndication), stun.Fingerprint)
	cases := []struct {
		name string
		from *rawPeer
		b    []byte
		want func(Stats) uint64
	}{
		{"empty", p, []byte{}, func(s Stats) uint64 { return s.DroppedMalformed }},
		{"outside RFC 7983", p, []byte{100, 1, 2, 3}, func(s Stats) uint64 { return s.DroppedMalformed }},
		{"truncated STUN", p, []byte{0, 1, 0, 8, 0x21, 0x12}, func(s Stats) uint64 { return s.DroppedMalformed }},
		{"STUN without USERNAME", p, noUser.Raw, func(s Stats) uint64 { return s.DroppedMalformed }},
		{"STUN indication", p, indication.Raw, func(s Stats) uint64 { return s.DroppedOther }},
		{"bad integrity", p, p.request(p.srvUfrag, "not-the-password-at-all", true).Raw, func(s Stats) uint64 { return s.DroppedBadIntegrity }},
		{"unknown ufrag", p, p.request("nosuchufrag", p.srvPwd, true).Raw, func(s Stats) uint64 { return s.DroppedUnknownUfrag }},
		{"DTLS from a stranger", stranger, []byte{22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, func(s Stats) uint64 { return s.DroppedUnknownAddr }},
		{"RTCP from a stranger", stranger, []byte{0x81, 201, 0, 1, 0, 0, 0, 1}, func(s Stats) uint64 { return s.DroppedUnknownAddr }},
		{"short RTP", p, []byte{0x80, 96, 0}, func(s Stats) uint64 { return s.DroppedMalformed }},
	}
	for _, tc := range cases {
		before := tc.want(srv.Stats())
		if _, err := tc.from.conn.WriteToUDPAddrPort(tc.b, tc.from.srv); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 5*time.Second, tc.name+" dropped under its reason", func() bool {
			return tc.want(srv.Stats()) == before+1
		})
	}
	if v.ICEStarted() || iceStarts.Load() != 0 {
		t.Errorf("a refused check started ICE (OnICEStart called %d times)", iceStarts.Load())
	}
	p.check(true)
	p.check(true)
	if !v.ICEStarted() || iceStarts.Load() != 1 {
		t.Errorf("two valid checks: ICEStarted %v, OnICEStart called %d times, want once", v.ICEStarted(), iceStarts.Load())
	}
	s := srv.Stats()
	handled := s.STUNAnswered + s.DTLSRecords + s.RTCPPackets + s.DroppedMalformed + s.DroppedUnknownUfrag +
		s.DroppedBadIntegrity + s.DroppedUnknownAddr + s.DroppedBadSRTCP + s.DroppedOther + s.ConsentAnswers
	if handled != s.Datagrams {
		t.Errorf("%d datagrams read but %d accounted for: %+v", s.Datagrams, handled, s)
	}
}

// assertForgotten: an ended viewer leaves nothing in the server's tables.
func assertForgotten(t *testing.T, srv *Server, v *Viewer) {
	t.Helper()
	srv.mu.RLock()
	defer srv.mu.RUnlock()
	if _, ok := srv.viewers[v]; ok {
		t.Error("ended viewer still registered")
	}
	for u, c := range srv.byUfrag {
		if c.v == v {
			t.Errorf("ended viewer's ufrag %s still answers", u)
		}
	}
	for a, x := range srv.byAddr {
		if x == v {
			t.Errorf("ended viewer's address %v still routed", a)
		}
	}
}

func attrOf(t *testing.T, sdpText, key string) string {
	t.Helper()
	for _, l := range strings.Split(sdpText, "\r\n") {
		if v, ok := strings.CutPrefix(l, "a="+key+":"); ok {
			return v
		}
	}
	t.Fatalf("no a=%s in\n%s", key, sdpText)
	return ""
}

// TestAddressTableBounded: however many addresses a viewer validates, it
// holds at most maxAddrsPerViewer routes, and never loses the one its
// media goes to.
func TestAddressTableBounded(t *testing.T) {
	srv, _ := newServer(t, nil)
	p := newRawPeer(t, srv)
	v := p.join(srv, h264Codec)
	nominated := netip.MustParseAddrPort("127.0.0.1:10000")
	srv.checked(v.creds, route{ap: nominated}, true, time.Now().UnixNano())
	for i := 1; i <= 3*maxAddrsPerViewer; i++ {
		srv.checked(v.creds, route{ap: netip.AddrPortFrom(nominated.Addr(), uint16(10000+i))}, false, time.Now().UnixNano())
	}
	srv.mu.RLock()
	defer srv.mu.RUnlock()
	if len(srv.byAddr) != maxAddrsPerViewer || srv.byAddr[route{ap: nominated}] != v || v.Remote() != nominated {
		t.Errorf("%d routes (want %d), nominated routed: %v, media to %v", len(srv.byAddr), maxAddrsPerViewer,
			srv.byAddr[route{ap: nominated}] == v, v.Remote())
	}
}

// TestProfileFallback: a peer without AES-GCM gets AES-CM with
// HMAC-SHA1-80, and media decrypts with it.
func TestProfileFallback(t *testing.T) {
	srv, logs := newServer(t, nil)
	p := newRawPeer(t, srv)
	v := p.join(srv, h264Codec)
	p.connect(srv, v, dtls.SRTP_AES128_CM_HMAC_SHA1_80)
	logs.WaitLog(t, time.Second, "viewer connected", "srtp=SRTP_AES128_CM_HMAC_SHA1_80")
	pkts := rtpstamp.NewStamper(v.VideoSSRC(), 102, 1, 1).Stamp(nil, frames(2)[1], false)
	if err := srv.NewSender(0).SendFrame(v, pkts); err != nil {
		t.Fatal(err)
	}
	for i := range pkts {
		if _, err := p.dec.DecryptRTP(nil, p.nextMedia(), nil); err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
	}
}

// TestTriggeredCheck: a check that does not nominate is answered and
// followed by a check of our own, as a controlled full agent's triggered
// check, so a controlling agent with regular nomination nominates at once.
// It carries the viewer's credentials, ICE-CONTROLLED and a fingerprint;
// a few at most are sent per ICE generation, and none once the viewer is
// connected.
func TestTriggeredCheck(t *testing.T) {
	srv, _ := newServer(t, nil)
	p := newRawPeer(t, srv)
	v := p.join(srv, h264Codec)
	triggered := func() int {
		n := 0
		for {
			select {
			case m := <-p.stunIn:
				if m.Type != stun.BindingRequest {
					continue
				}
				var user stun.Username
				if err := user.GetFrom(m); err != nil || user.String() != p.ufrag+":"+p.srvUfrag {
					t.Errorf("triggered check's USERNAME %q (%v), want %q", user, err, p.ufrag+":"+p.srvUfrag)
				}
				if err := stun.NewShortTermIntegrity(p.pwd).Check(m); err != nil {
					t.Errorf("triggered check's integrity: %v", err)
				}
				if err := stun.Fingerprint.Check(m); err != nil {
					t.Errorf("triggered check's fingerprint: %v", err)
				}
				if !m.Contains(stun.AttrICEControlled) || m.Contains(stun.AttrUseCandidate) || !m.Contains(stun.AttrPriority) {
					t.Errorf("triggered check's attributes: %v", m)
				}
				n++
			case <-time.After(300 * time.Millisecond):
				return n
			}
		}
	}
	p.check(false)
	if n := triggered(); n != 1 {
		t.Fatalf("%d triggered checks after the first check, want 1", n)
	}
	// Sent without waiting for the answers, which check would skip
	// triggered checks to find.
	for range 2 * maxTriggeredChecks {
		if _, err := p.conn.WriteToUDPAddrPort(p.request(p.srvUfrag, p.srvPwd, false).Raw, p.srv); err != nil {
			t.Fatal(err)
		}
	}
	if n := triggered(); n != maxTriggeredChecks-1 {
		t.Errorf("%d more triggered checks after %d checks, want %d", n, 2*maxTriggeredChecks, maxTriggeredChecks-1)
	}
	p2 := newRawPeer(t, srv)
	v2 := p2.join(srv, h264Codec)
	p2.connect(srv, v2)
	for range 10 {
		select {
		case <-p2.stunIn:
		default:
		}
	}
	p2.check(false)
	for {
		select {
		case m := <-p2.stunIn:
			if m.Type == stun.BindingRequest {
				t.Fatal("a triggered check after the viewer connected")
			}
			continue
		case <-time.After(300 * time.Millisecond):
		}
		break
	}
	v.Close()
	v2.Close()
}
