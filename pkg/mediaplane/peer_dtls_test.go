package mediaplane

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"sync"
	"time"

	"github.com/pion/dtls/v3"
	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"
	"github.com/pion/transport/v5/deadline"
)

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
