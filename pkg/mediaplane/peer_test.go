package mediaplane

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pion/dtls/v3"
	"github.com/pion/dtls/v3/pkg/crypto/selfsign"
	"github.com/pion/sdp/v3"
	"github.com/pion/srtp/v3"
	"github.com/pion/stun/v4"
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

func (p *rawPeer) String() string { return fmt.Sprintf("peer %v", p.conn.LocalAddr()) }
