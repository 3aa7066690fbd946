package mediaplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/dtls/v3"
	"github.com/pion/dtls/v3/pkg/crypto/selfsign"
	"github.com/pion/rtp"
	"github.com/pion/sdp/v3"
	"github.com/pion/srtp/v3"
	"github.com/pion/stun/v4"
	"github.com/pion/transport/v5/deadline"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// rawPeer is a viewer assembled from pion's parts: STUN checks written
// with pion/stun, a pion/dtls client, and SRTP contexts derived on its
// side with pion/srtp's own key extraction. It reads its socket on one
// goroutine and sorts what arrives by its first byte.
type rawPeer struct {
	t    testing.TB
	conn *net.UDPConn
	srv  netip.AddrPort
	cert tls.Certificate

	ufrag, pwd       string // ours, as the offerer
	srvUfrag, srvPwd string // from the answer

	stunIn chan *stun.Message
	dtlsIn chan []byte
	media  chan []byte
	dtlsN  atomic.Int64 // DTLS datagrams received
	wg     sync.WaitGroup
	// silent stops the peer answering the server's checks, as a viewer
	// that went away (or an address that never wanted the stream).
	silent atomic.Bool

	dtls    *dtls.Conn
	dec     *srtp.Context // decrypts what the server sends
	enc     *srtp.Context // encrypts what we send
	written [][]byte      // our DTLS writes since the last read
	flight  [][]byte      // our last complete flight
	wmu     sync.Mutex
}

func newRawPeer(t testing.TB, srv *Server) *rawPeer {
	t.Helper()
	return newRawPeerAt(t, srv, nil)
}

// newRawPeerAt makes a peer with cert (nil: a fresh one) on a new
// loopback socket of the server's address family.
func newRawPeerAt(t testing.TB, srv *Server, cert *tls.Certificate) *rawPeer {
	t.Helper()
	network, ip := "udp4", net.IPv4(127, 0, 0, 1)
	if srv.LocalAddr().IP.To4() == nil {
		network, ip = "udp6", net.IPv6loopback
	}
	conn, err := net.ListenUDP(network, &net.UDPAddr{IP: ip})
	if err != nil {
		t.Fatal(err)
	}
	p := &rawPeer{t: t, conn: conn, srv: srv.LocalAddr().AddrPort(), ufrag: randomICEString(8), pwd: randomICEString(24),
		stunIn: make(chan *stun.Message, 64), dtlsIn: make(chan []byte, 64), media: make(chan []byte, 1024)}
	if cert != nil {
		p.cert = *cert
	} else if p.cert, err = selfsign.GenerateSelfSigned(); err != nil {
		t.Fatal(err)
	}
	p.wg.Go(p.read)
	t.Cleanup(func() {
		if p.dtls != nil {
			_ = p.dtls.Close()
		}
		conn.Close()
		p.wg.Wait()
	})
	return p
}

func (p *rawPeer) read() {
	buf := make([]byte, 2048)
	for {
		n, _, err := p.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		b := append([]byte(nil), buf[:n]...)
		switch {
		case n > 0 && b[0] <= 3:
			p.takeSTUN(p.conn, b)
		case n > 0 && b[0] >= 20 && b[0] <= 63:
			p.dtlsN.Add(1)
			trySend(p.dtlsIn, b)
		default:
			trySend(p.media, b)
		}
	}
}

// secondSocket is another socket of the peer's, on ip: it answers the
// server's checks there as the main one does and hands on the RTP and
// RTCP that arrive, until the test ends.
func (p *rawPeer) secondSocket(ip net.IP) (*net.UDPConn, <-chan []byte) {
	p.t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: ip})
	if err != nil {
		p.t.Fatal(err)
	}
	got := make(chan []byte, 64)
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 2048)
		for {
			n, _, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			b := append([]byte(nil), buf[:n]...)
			if n > 0 && b[0] >= 128 {
				trySend(got, b)
			} else if n > 0 && b[0] <= 3 {
				p.takeSTUN(conn, b)
			}
		}
	})
	p.t.Cleanup(func() { conn.Close(); wg.Wait() })
	return conn, got
}

// takeSTUN answers the server's checks that arrive on conn, as a full
// agent does (unless silent), and queues every STUN message for the test.
func (p *rawPeer) takeSTUN(conn *net.UDPConn, b []byte) {
	m := &stun.Message{Raw: b}
	if m.Decode() != nil {
		return
	}
	if m.Type == stun.BindingRequest && !p.silent.Load() {
		resp, err := stun.Build(stun.NewTransactionIDSetter(m.TransactionID), stun.BindingSuccess,
			&stun.XORMappedAddress{IP: p.srv.Addr().AsSlice(), Port: int(p.srv.Port())},
			stun.NewShortTermIntegrity(p.pwd), stun.Fingerprint)
		if err == nil {
			_, _ = conn.WriteToUDPAddrPort(resp.Raw, p.srv)
		}
	}
	trySend(p.stunIn, m)
}

func trySend[T any](ch chan T, v T) {
	select {
	case ch <- v:
	default:
	}
}

// offer is a browser-shaped offer carrying the fingerprint of fpCert
// (nil: our own certificate).
func (p *rawPeer) offer(fpCert *tls.Certificate) string {
	if fpCert == nil {
		fpCert = &p.cert
	}
	return browserOffer(p.ufrag, p.pwd, colonHex(sha256Sum(fpCert.Certificate[0])))
}

// browserOffer is shaped like a browser's WHEP offer: BUNDLE, recvonly
// video with VP8 and H.264 (payload type 102) and the feedback browsers
// offer, and a data channel section a WHEP server rejects.
func browserOffer(ufrag, pwd, fingerprint string) string {
	return "v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n" +
		"a=group:BUNDLE 0 1\r\n" +
		"a=fingerprint:sha-256 " + fingerprint + "\r\n" +
		"m=video 9 UDP/TLS/RTP/SAVPF 96 102\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\n" +
		"a=ice-ufrag:" + ufrag + "\r\na=ice-pwd:" + pwd + "\r\n" +
		"a=setup:actpass\r\na=recvonly\r\na=rtcp-mux\r\na=rtcp-rsize\r\n" +
		"a=rtpmap:96 VP8/90000\r\n" +
		"a=rtpmap:102 H264/90000\r\na=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n" +
		"a=rtcp-fb:102 goog-remb\r\na=rtcp-fb:102 transport-cc\r\na=rtcp-fb:102 ccm fir\r\na=rtcp-fb:102 nack\r\na=rtcp-fb:102 nack pli\r\n" +
		"m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\na=sctp-port:5000\r\n"
}

var h264Codec = ViewerConfig{Video: Codec{PayloadType: 102, Fmtp: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"}}

// join offers to srv and reads our credentials from the answer.
func (p *rawPeer) join(srv *Server, vc ViewerConfig) *Viewer {
	p.t.Helper()
	v, answer, err := srv.NewViewer(mustOffer(p.t, p.offer(nil)), vc)
	if err != nil {
		p.t.Fatal(err)
	}
	var sd sdp.SessionDescription
	if err := sd.UnmarshalString(answer); err != nil {
		p.t.Fatal(err)
	}
	p.srvUfrag, _ = sd.MediaDescriptions[0].Attribute("ice-ufrag")
	p.srvPwd, _ = sd.MediaDescriptions[0].Attribute("ice-pwd")
	return v
}

// request builds a binding request as a controlling full agent sends it.
func (p *rawPeer) request(srvUfrag, srvPwd string, nominate bool) *stun.Message {
	p.t.Helper()
	return testkit.ICECheck{ServerUfrag: srvUfrag, ClientUfrag: p.ufrag, Password: srvPwd, Controlling: true, Nominate: nominate}.Build(p.t)
}

// check sends a valid check and returns the mapped address of the
// response, which must carry our server's integrity and fingerprint.
func (p *rawPeer) check(nominate bool) netip.AddrPort {
	p.t.Helper()
	return p.checkWith(p.conn, p.srvUfrag, p.srvPwd, nominate)
}

func (p *rawPeer) checkWith(conn *net.UDPConn, srvUfrag, srvPwd string, nominate bool) netip.AddrPort {
	p.t.Helper()
	ap, _ := p.checkUnless(conn, srvUfrag, srvPwd, nominate, nil)
	return ap
}

// checkUnlessEnded is check for a viewer that may end at any moment (its
// consent expiring): a check the server leaves unanswered because the
// viewer ended meanwhile is not a failure. ok is false then.
func (p *rawPeer) checkUnlessEnded(ended <-chan struct{}) (ok bool) {
	p.t.Helper()
	_, ok = p.checkUnless(p.conn, p.srvUfrag, p.srvPwd, false, ended)
	return ok
}

func (p *rawPeer) checkUnless(conn *net.UDPConn, srvUfrag, srvPwd string, nominate bool, ended <-chan struct{}) (netip.AddrPort, bool) {
	p.t.Helper()
	req := p.request(srvUfrag, srvPwd, nominate)
	if _, err := conn.WriteToUDPAddrPort(req.Raw, p.srv); err != nil {
		p.t.Fatal(err)
	}
	timeout := time.After(5 * time.Second)
	for {
		select {
		case m := <-p.stunIn:
			if m.TransactionID != req.TransactionID {
				continue
			}
			if m.Type != stun.BindingSuccess {
				p.t.Fatalf("response type %v", m.Type)
			}
			if err := stun.NewShortTermIntegrity(srvPwd).Check(m); err != nil {
				p.t.Fatalf("response integrity: %v", err)
			}
			if err := stun.Fingerprint.Check(m); err != nil {
				p.t.Fatalf("response fingerprint: %v", err)
			}
			var xa stun.XORMappedAddress
			if err := xa.GetFrom(m); err != nil {
				p.t.Fatal(err)
			}
			ip, _ := netip.AddrFromSlice(xa.IP)
			return netip.AddrPortFrom(ip.Unmap(), uint16(xa.Port)), true
		case <-ended:
			return netip.AddrPort{}, false
		case <-timeout:
			p.t.Fatal("no answer to a valid STUN check within 5 s")
		}
	}
}

// handshake runs the DTLS client and derives our SRTP contexts. The
// client offers profiles, or what a browser offers when none are given.
func (p *rawPeer) handshake(srvFingerprint string, profiles ...dtls.SRTPProtectionProfile) error {
	if len(profiles) == 0 {
		profiles = []dtls.SRTPProtectionProfile{dtls.SRTP_AES128_CM_HMAC_SHA1_80, dtls.SRTP_AEAD_AES_128_GCM}
	}
	conn, err := dtls.ClientWithOptions(newPeerPipe(p), net.UDPAddrFromAddrPort(p.srv),
		dtls.WithCertificates(p.cert),
		dtls.WithSRTPProtectionProfiles(profiles...),
		dtls.WithExtendedMasterSecret(dtls.RequireExtendedMasterSecret),
		dtls.WithInsecureSkipVerify(true),
		dtls.WithVerifyPeerCertificate(func(raw [][]byte, _ [][]*x509.Certificate) error {
			if colonHex(sha256Sum(raw[0])) != srvFingerprint {
				return errors.New("server certificate does not match the answer's fingerprint")
			}
			return nil
		}))
	if err != nil {
		return err
	}
	p.dtls = conn
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := conn.HandshakeContext(ctx); err != nil {
		return err
	}
	prof, _ := conn.SelectedSRTPProtectionProfile()
	cfg := &srtp.Config{Profile: srtp.ProtectionProfile(prof)}
	state, _ := conn.ConnectionState()
	if err := cfg.ExtractSessionKeysFromDTLS(&state, true); err != nil {
		return err
	}
	if p.dec, err = srtp.CreateContext(cfg.Keys.RemoteMasterKey, cfg.Keys.RemoteMasterSalt, cfg.Profile); err != nil {
		return err
	}
	p.enc, err = srtp.CreateContext(cfg.Keys.LocalMasterKey, cfg.Keys.LocalMasterSalt, cfg.Profile)
	return err
}

// connect runs ICE and DTLS to a connected viewer.
func (p *rawPeer) connect(srv *Server, v *Viewer, profiles ...dtls.SRTPProtectionProfile) {
	p.t.Helper()
	if got := p.check(true); got != p.conn.LocalAddr().(*net.UDPAddr).AddrPort() {
		p.t.Fatalf("XOR-MAPPED-ADDRESS %v, want %v", got, p.conn.LocalAddr())
	}
	if err := p.handshake(srv.Fingerprint(), profiles...); err != nil {
		p.t.Fatalf("DTLS: %v", err)
	}
	select {
	case <-v.Connected():
	case <-time.After(5 * time.Second):
		p.t.Fatalf("viewer not connected after the handshake: %v", v.Err())
	}
}

// nextMedia returns the next SRTP or SRTCP datagram.
// receive decrypts the next media datagrams, one for each of pkts, with
// the peer's own keys and checks each against its packet: sequence
// number, SSRC and payload.
func (p *rawPeer) receive(ssrc uint32, pkts []rtp.Packet) {
	p.t.Helper()
	for i := range pkts {
		var h rtp.Header
		plain, err := p.dec.DecryptRTP(nil, p.nextMedia(), &h)
		if err != nil {
			p.t.Fatalf("packet %d does not decrypt with the peer's own keys: %v", i, err)
		}
		if h.SequenceNumber != pkts[i].SequenceNumber || h.SSRC != ssrc ||
			!bytes.Equal(plain[h.MarshalSize():], pkts[i].Payload) {
			p.t.Fatalf("packet %d: got seq %d ssrc %d, want %s", i, h.SequenceNumber, h.SSRC, describe(&pkts[i]))
		}
	}
}

func (p *rawPeer) nextMedia() []byte {
	p.t.Helper()
	select {
	case b := <-p.media:
		return b
	case <-time.After(5 * time.Second):
		p.t.Fatal("no media datagram within 5 s")
		return nil
	}
}

// peerPipe carries the DTLS client's records over the peer's socket.
type peerPipe struct {
	p        *rawPeer
	closed   chan struct{}
	once     sync.Once
	deadline *deadline.Deadline
}

func newPeerPipe(p *rawPeer) *peerPipe {
	return &peerPipe{p: p, closed: make(chan struct{}), deadline: deadline.New()}
}

func (c *peerPipe) ReadFrom(b []byte) (int, net.Addr, error) {
	select {
	case d := <-c.p.dtlsIn:
		c.p.wmu.Lock()
		if len(c.p.written) > 0 {
			c.p.flight, c.p.written = c.p.written, nil
		}
		c.p.wmu.Unlock()
		return copy(b, d), net.UDPAddrFromAddrPort(c.p.srv), nil
	case <-c.closed:
		return 0, nil, net.ErrClosed
	case <-c.deadline.Done():
		return 0, nil, os.ErrDeadlineExceeded
	}
}

func (c *peerPipe) WriteTo(b []byte, _ net.Addr) (int, error) {
	c.p.wmu.Lock()
	c.p.written = append(c.p.written, append([]byte(nil), b...))
	c.p.wmu.Unlock()
	return c.p.conn.WriteToUDPAddrPort(b, c.p.srv)
}

func (c *peerPipe) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *peerPipe) LocalAddr() net.Addr                { return c.p.conn.LocalAddr() }
func (c *peerPipe) SetDeadline(t time.Time) error      { c.deadline.Set(t); return nil }
func (c *peerPipe) SetReadDeadline(t time.Time) error  { c.deadline.Set(t); return nil }
func (c *peerPipe) SetWriteDeadline(t time.Time) error { return nil }

func (p *rawPeer) String() string { return fmt.Sprintf("peer %v", p.conn.LocalAddr()) }
