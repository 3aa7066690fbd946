package mediaplane

import (
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/rtcp"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// TestRawPeer checks the transport against a peer built from pion's
// parts, which derives its keys on its own side: what the server encrypts
// decrypts there, what it sends is read as RTCP, tampered or replayed
// SRTCP is dropped, a repeated last flight is answered, and Close sends
// a BYE and a close_notify the peer's DTLS stack accepts.
func TestRawPeer(t *testing.T) {
	srv, logs := newServer(t, nil)
	p := newRawPeer(t, srv)
	var mu sync.Mutex
	var got []rtcp.Packet
	vc := h264Codec
	vc.OnRTCP = func(pkts []rtcp.Packet) {
		mu.Lock()
		defer mu.Unlock()
		for _, pk := range pkts {
			b, _ := pk.Marshal() // the packets are lent: keep a copy
			c, _ := rtcp.Unmarshal(b)
			got = append(got, c...)
		}
	}
	v := p.join(srv, vc)
	p.connect(srv, v)
	// The peer listed AES-CM first, as browsers do; the server prefers GCM.
	logs.WaitLog(t, time.Second, "viewer connected", "srtp=SRTP_AEAD_AES_128_GCM")

	// Media: a frame of FU-A fragments and a short tail, as GSO groups it.
	au := frames(2)[1]
	st := rtpstamp.NewStamper(v.VideoSSRC(), 102, 1, 1)
	pkts := st.Stamp(nil, au, false)
	snd := srv.NewSender(4)
	if err := snd.SendFrame(v, pkts); err != nil {
		t.Fatal(err)
	}
	p.receive(v.VideoSSRC(), pkts)

	// RTCP from the peer: a PLI reaches OnRTCP; tampered and replayed
	// copies do not.
	pli, _ := rtcp.Marshal([]rtcp.Packet{&rtcp.PictureLossIndication{SenderSSRC: 7, MediaSSRC: v.VideoSSRC()}})
	enc, err := p.enc.EncryptRTCP(nil, pli, nil)
	if err != nil {
		t.Fatal(err)
	}
	tampered := slices.Clone(enc)
	tampered[10] ^= 1
	before := srv.Stats()
	for _, b := range [][]byte{tampered, enc, enc} {
		if _, err := p.conn.WriteToUDPAddrPort(b, p.srv); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 5*time.Second, "three RTCP datagrams handled", func() bool {
		s := srv.Stats()
		return s.RTCPPackets-before.RTCPPackets+s.DroppedBadSRTCP-before.DroppedBadSRTCP >= 3
	})
	s := srv.Stats()
	if s.RTCPPackets-before.RTCPPackets != 1 || s.DroppedBadSRTCP-before.DroppedBadSRTCP != 2 {
		t.Errorf("RTCP taken %d, dropped %d; want 1 taken, 2 dropped (tampered, replayed)",
			s.RTCPPackets-before.RTCPPackets, s.DroppedBadSRTCP-before.DroppedBadSRTCP)
	}
	mu.Lock()
	if len(got) != 1 || got[0].(*rtcp.PictureLossIndication).MediaSSRC != v.VideoSSRC() {
		t.Errorf("OnRTCP got %v, want the one PLI", got)
	}
	mu.Unlock()

	// Our last flight again, as if the server's Finished had been lost:
	// the server repeats its own from the record it kept.
	p.wmu.Lock()
	last := slices.Clone(p.flight)
	p.wmu.Unlock()
	if len(last) == 0 {
		t.Fatal("the peer recorded no last flight")
	}
	n := p.dtlsN.Load()
	for _, d := range last {
		if _, err := p.conn.WriteToUDPAddrPort(d, p.srv); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 5*time.Second, "the server's last flight again", func() bool { return p.dtlsN.Load() > n })

	v.Close()
	bye := p.nextMedia()
	plain, err := p.dec.DecryptRTCP(nil, bye, nil)
	if err != nil {
		t.Fatalf("BYE does not decrypt: %v", err)
	}
	pk, err := rtcp.Unmarshal(plain)
	if err != nil || len(pk) != 1 {
		t.Fatalf("BYE: %v %v", pk, err)
	}
	if g, ok := pk[0].(*rtcp.Goodbye); !ok || !slices.Equal(g.Sources, []uint32{v.VideoSSRC()}) {
		t.Fatalf("got %v, want a BYE for the video SSRC", pk[0])
	}
	_ = p.dtls.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = p.dtls.Read(make([]byte, 100))
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("peer's DTLS read after Close: %v, want the close_notify to end it", err)
	}
	t.Logf("peer's DTLS after Close: %v", err)
}

// TestConsentExpires: a connected viewer that stops answering our consent
// checks is ended after the consent timeout, and its state is released.
func TestConsentExpires(t *testing.T) {
	srv, logs := newServer(t, func(c *Config) { c.ConsentTimeout = time.Second })
	p := newRawPeer(t, srv)
	v := p.join(srv, h264Codec)
	p.connect(srv, v)
	p.silent.Store(true)
	start := time.Now()
	select {
	case <-v.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("viewer still alive 10 s after its last check, with a 1 s consent timeout")
	}
	if v.Err() != plane.ErrConsentExpired {
		t.Fatalf("Err() = %v, want plane.ErrConsentExpired", v.Err())
	}
	t.Logf("ended %v after the last check", time.Since(start).Round(10*time.Millisecond))
	logs.WaitLog(t, time.Second, "viewer closed", "reason=\""+plane.ErrConsentExpired.Error())
	assertForgotten(t, srv, v)
}

// TestHandshakeTimeout: a viewer that never checks, and one that checks
// but never starts DTLS, are both ended after the handshake timeout.
func TestHandshakeTimeout(t *testing.T) {
	srv, _ := newServer(t, func(c *Config) { c.HandshakeTimeout = time.Second })
	silent := newRawPeer(t, srv)
	vs := silent.join(srv, h264Codec)
	p := newRawPeer(t, srv)
	v := p.join(srv, h264Codec)
	p.check(true)
	if !v.ICEStarted() || vs.ICEStarted() {
		t.Fatalf("ICEStarted: checked viewer %v, silent viewer %v", v.ICEStarted(), vs.ICEStarted())
	}
	for name, x := range map[string]*Viewer{"silent": vs, "ICE only": v} {
		select {
		case <-x.Done():
			if x.Err() != plane.ErrHandshakeTimeout {
				t.Errorf("%s viewer: Err() = %v, want plane.ErrHandshakeTimeout", name, x.Err())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s viewer alive 10 s after its answer, with a 1 s handshake timeout", name)
		}
		assertForgotten(t, srv, x)
	}
}

// TestFingerprintMismatch: a DTLS client whose certificate is not the one
// the offer named is refused, and the viewer ends.
func TestFingerprintMismatch(t *testing.T) {
	srv, _ := newServer(t, nil)
	p := newRawPeer(t, srv)
	other := newRawPeer(t, srv)
	v, answer, err := srv.NewViewer(mustOffer(t, p.offer(&other.cert)), h264Codec)
	if err != nil {
		t.Fatal(err)
	}
	p.srvUfrag = attrOf(t, answer, "ice-ufrag")
	p.srvPwd = attrOf(t, answer, "ice-pwd")
	p.check(true)
	if err := p.handshake(srv.Fingerprint()); err == nil {
		t.Fatal("handshake with the wrong certificate succeeded")
	}
	select {
	case <-v.Done():
		if !strings.Contains(v.Err().Error(), "fingerprint") {
			t.Errorf("Err() = %v, want a fingerprint mismatch", v.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("viewer alive after a refused certificate")
	}
}

// TestICERestart: new credentials on the same viewer; the old ones answer
// until the viewer checks with the new ones from a new address, which
// nominates it, and media follows to that address with the same keys.
func TestICERestart(t *testing.T) {
	srv, _ := newServer(t, nil)
	p := newRawPeer(t, srv)
	v := p.join(srv, h264Codec)
	p.connect(srv, v)
	if _, _, err := v.RestartICE("", p.pwd); err == nil {
		t.Error("RestartICE without a ufrag succeeded")
	}
	if _, _, err := v.RestartICE(randomICEString(8), ""); err == nil {
		t.Error("RestartICE without a password succeeded")
	}
	oldUfrag, oldPwd, oldRemote := p.srvUfrag, p.srvPwd, p.ufrag
	p.ufrag = randomICEString(8) // the viewer's new generation
	ufrag, pwd, err := v.RestartICE(p.ufrag, p.pwd)
	if err != nil {
		t.Fatal(err)
	}
	if ufrag == oldUfrag || pwd == oldPwd {
		t.Fatal("restart kept the old credentials")
	}
	// A consent check of the old generation still works meanwhile (the
	// viewer sends it with its old ufrag).
	newUfrag := p.ufrag
	p.ufrag = oldRemote
	p.check(false)
	p.ufrag = newUfrag

	moved, got := p.secondSocket(net.IPv4(127, 0, 0, 1))
	p.checkWith(moved, ufrag, pwd, true)
	// Media moves once the new address answers our consent check.
	testkit.WaitFor(t, 5*time.Second, "media to move to the nominated address", func() bool {
		return v.Remote() == moved.LocalAddr().(*net.UDPAddr).AddrPort()
	})
	before := srv.Stats().DroppedUnknownUfrag
	_, _ = p.conn.WriteToUDPAddrPort(p.request(oldUfrag, oldPwd, false).Raw, p.srv)
	testkit.WaitFor(t, 5*time.Second, "the old generation's check to be refused", func() bool {
		return srv.Stats().DroppedUnknownUfrag > before
	})

	pkts := rtpstamp.NewStamper(v.VideoSSRC(), 102, 9, 9).Stamp(nil, frames(2)[1], false)
	if err := srv.NewSender(0).SendFrame(v, pkts); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		if _, err := p.dec.DecryptRTP(nil, b, nil); err != nil {
			t.Fatalf("media at the new address does not decrypt: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no media at the new address")
	}
	v.Close()
}
