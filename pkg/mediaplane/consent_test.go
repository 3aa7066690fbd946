package mediaplane

import (
	"math"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/stun/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// victim is a socket at an address that never asked for the stream: it
// counts what arrives and answers nothing.
type victim struct {
	conn                 *net.UDPConn
	bytes, media, stunIn atomic.Int64
}

func newVictim(t *testing.T, ip net.IP) *victim {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: ip})
	if err != nil {
		t.Fatal(err)
	}
	vt := &victim{conn: conn}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			vt.bytes.Add(int64(n))
			switch {
			case n > 0 && buf[0] <= 3:
				vt.stunIn.Add(1)
			case n > 0 && buf[0] >= 20:
				vt.media.Add(1) // DTLS, RTP or RTCP: none belongs here
			}
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	return vt
}

// TestSpoofedNomination: a viewer that knows its own ICE password and
// SRTP keys sends, from a spoofed source (127.0.0.9), checks with valid
// integrity and USE-CANDIDATE and authenticated SRTCP. The address never
// answers our consent check, so media never goes there: it gets the STUN
// answers and our checks only, a bounded few bytes per spoofed byte,
// while the real address keeps receiving media throughout.
func TestSpoofedNomination(t *testing.T) {
	srv, logs := newServer(t, nil)
	p := newRawPeer(t, srv)
	v := p.join(srv, h264Codec)
	p.connect(srv, v)
	home := p.conn.LocalAddr().(*net.UDPAddr).AddrPort()
	vt := newVictim(t, net.IPv4(127, 0, 0, 9))

	rr, err := rtcp.Marshal([]rtcp.Packet{&rtcp.ReceiverReport{SSRC: 1, Reports: []rtcp.ReceptionReport{{SSRC: v.VideoSSRC()}}}})
	if err != nil {
		t.Fatal(err)
	}
	snd := srv.NewSender(0)
	st := rtpstamp.NewStamper(v.VideoSSRC(), 102, 1, 1)
	aus := frames(4)
	var spoofed int64
	// Two refused nominations in a row: the second after the first was
	// given up, so the attacker repeating itself gains nothing either.
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; srv.Stats().ConsentFailures < 2; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than two consent failures after %d spoofed nominations: %+v", i, srv.Stats())
		}
		req := p.request(p.srvUfrag, p.srvPwd, true)
		srtcp, err := p.enc.EncryptRTCP(nil, rr, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range [][]byte{req.Raw, srtcp} {
			if _, err := vt.conn.WriteToUDPAddrPort(b, p.srv); err != nil {
				t.Fatal(err)
			}
			spoofed += int64(len(b))
		}
		if err := snd.SendFrame(v, st.Stamp(nil, aus[i%len(aus)], false)); err != nil {
			t.Fatal(err)
		}
		if got := v.Remote(); got != home {
			t.Fatalf("media moved to %v on a spoofed nomination", got)
		}
		time.Sleep(20 * time.Millisecond) // pacing the attack, not waiting for a result
	}
	// The real viewer still gets media that decrypts.
	for len(p.media) > 0 {
		<-p.media
	}
	if err := snd.SendFrame(v, st.Stamp(nil, aus[0], false)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.dec.DecryptRTP(nil, p.nextMedia(), nil); err != nil {
		t.Fatalf("media at the real address does not decrypt: %v", err)
	}
	// Whatever is in flight to the victim has arrived once the answer to
	// one more check (sent after everything else) has.
	before := vt.stunIn.Load()
	if _, err := vt.conn.WriteToUDPAddrPort(p.request(p.srvUfrag, p.srvPwd, false).Raw, p.srv); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the last answer at the victim", func() bool { return vt.stunIn.Load() > before })

	t.Logf("attacker sent %d bytes from the victim's address; the victim received %d bytes in %d STUN messages and %d media datagrams; consent failures %d",
		spoofed, vt.bytes.Load(), vt.stunIn.Load(), vt.media.Load(), srv.Stats().ConsentFailures)
	if vt.media.Load() != 0 {
		t.Errorf("%d media datagrams reached an address that never answered a consent check", vt.media.Load())
	}
	// Each spoofed check draws one answer of about its size; each refused
	// nomination draws maxWantChecks checks of ours.
	if max := 2*spoofed + 3*maxWantChecks*200; vt.bytes.Load() > max {
		t.Errorf("victim received %d bytes, over the bound %d", vt.bytes.Load(), max)
	}
	logs.WaitLog(t, time.Second, "ICE nomination unanswered", "nominated=127.0.0.9:")
}

// joinPion offers pv's offer to srv with vc, gives pv the answer and
// waits until both ends are connected.
func joinPion(t *testing.T, srv *Server, pv *pionViewer, vc ViewerConfig) (*Viewer, string) {
	t.Helper()
	v, answer, err := srv.NewViewer(mustOffer(t, pv.offer), vc)
	if err != nil {
		t.Fatal(err)
	}
	pv.accept(t, answer)
	waitConnected(t, v, pv)
	return v, answer
}

// TestPionAnswersConsent: pion, a full agent as browsers are, answers the
// consent checks of an ICE-lite server, so consent holds on its own
// answers for several consent timeouts.
func TestPionAnswersConsent(t *testing.T) {
	const timeout = 6 * time.Second // room for a loaded -race run
	srv, _ := newServer(t, func(c *Config) { c.ProofTimeout = timeout })
	pv := newPionViewer(t, false)
	v, _ := joinPion(t, srv, pv, codecsFor(t, pv.offer))
	start, before := time.Now(), srv.Stats().ConsentAnswers
	// Checks go every sixth of the timeout: eight answers span more than
	// one.
	testkit.WaitFor(t, 30*time.Second, "pion to answer eight consent checks", func() bool {
		return srv.Stats().ConsentAnswers-before >= 8 || v.Err() != nil
	})
	if err := v.Err(); err != nil {
		t.Fatalf("viewer ended: %v", err)
	}
	t.Logf("pion answered %d consent checks in %v", srv.Stats().ConsentAnswers-before, time.Since(start).Round(time.Millisecond))
}

// TestConsentNeedsAnswers: a viewer that keeps sending valid checks (which
// anyone who knows its password can forge from any address) but answers
// none of ours loses its media after the proof timeout.
func TestConsentNeedsAnswers(t *testing.T) {
	const timeout = time.Second
	srv, logs := newServer(t, func(c *Config) { c.ProofTimeout = timeout })
	p := newRawPeer(t, srv)
	v := p.join(srv, h264Codec)
	p.connect(srv, v)
	p.silent.Store(true)
	start := time.Now()
	for i := 0; ; i++ {
		if i == 200 {
			t.Fatalf("viewer alive %v after its last answer, with a %v proof timeout", time.Since(start), timeout)
		}
		select {
		case <-v.Done():
		case <-time.After(50 * time.Millisecond): // the viewer's check pace
			// The viewer's checks keep coming: only the server's go
			// unanswered. One sent as the viewer expires gets no answer.
			p.checkUnlessEnded(v.Done())
			continue
		}
		break
	}
	if v.Err() != plane.ErrConsentExpired {
		t.Fatalf("Err() = %v, want plane.ErrConsentExpired", v.Err())
	}
	t.Logf("ended %v after its last answer", time.Since(start).Round(10*time.Millisecond))
	if srv.Stats().ConsentFailures != 1 {
		t.Errorf("consent failures %d, want 1", srv.Stats().ConsentFailures)
	}
	logs.WaitLog(t, time.Second, "consent checks unanswered for the proof timeout", "media_remote="+p.conn.LocalAddr().String())
}

// TestNominationOfAnsweredPair: a pair whose address already answered our
// triggered check (sent while the viewer checks pairs) is proven, so its
// nomination moves media at once, without another round trip.
func TestNominationOfAnsweredPair(t *testing.T) {
	srv, _ := newServer(t, nil)
	p := newRawPeer(t, srv)
	v := p.join(srv, h264Codec)
	second, _ := p.secondSocket(net.IPv4(127, 0, 0, 3))
	p.check(false) // the first address: media's stand-in until a nomination
	p.checkWith(second, p.srvUfrag, p.srvPwd, false)
	testkit.WaitFor(t, 5*time.Second, "both triggered checks answered", func() bool {
		return srv.Stats().ConsentAnswers >= 2
	})
	p.checkWith(second, p.srvUfrag, p.srvPwd, true)
	// checkWith returned with the answer, which the server sends after
	// acting on the nomination.
	if got, want := v.Remote(), second.LocalAddr().(*net.UDPAddr).AddrPort(); got != want {
		t.Fatalf("media goes to %v after nominating the answered pair %v", got, want)
	}
}

// TestConsentTransactionsBounded: a viewer holds at most maxConsentTx of
// our checks open; answers to older ones, pushed out, prove nothing.
func TestConsentTransactionsBounded(t *testing.T) {
	srv, _ := newServer(t, nil)
	p := newRawPeer(t, srv)
	v := p.join(srv, h264Codec)
	p.connect(srv, v)
	p.silent.Store(true)
	// No periodic check of the janitor's may join ours, however slow the
	// machine.
	v.consent.mu.Lock()
	v.consent.nextCheck = math.MaxInt64
	v.consent.mu.Unlock()
	for len(p.stunIn) > 0 {
		<-p.stunIn
	}
	const n = 3 * maxConsentTx
	home := route{ap: p.conn.LocalAddr().(*net.UDPAddr).AddrPort()}
	for range n {
		srv.sendCheck(v.creds, home)
	}
	var reqs []*stun.Message
	timeout := time.After(10 * time.Second)
	for len(reqs) < n {
		select {
		case m := <-p.stunIn:
			if m.Type == stun.BindingRequest {
				reqs = append(reqs, m)
			}
		case <-timeout:
			t.Fatalf("%d of our %d checks arrived", len(reqs), n)
		}
	}
	before := srv.Stats()
	for _, m := range reqs {
		resp, err := stun.Build(stun.NewTransactionIDSetter(m.TransactionID), stun.BindingSuccess,
			stun.NewShortTermIntegrity(p.pwd), stun.Fingerprint)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.conn.WriteToUDPAddrPort(resp.Raw, p.srv); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 10*time.Second, "every answer accounted for", func() bool {
		s := srv.Stats()
		return s.ConsentAnswers+s.DroppedOther-before.ConsentAnswers-before.DroppedOther >= n
	})
	s := srv.Stats()
	if got := s.ConsentAnswers - before.ConsentAnswers; got != maxConsentTx {
		t.Errorf("%d answers proved consent, want the last %d checks' only", got, maxConsentTx)
	}
}
