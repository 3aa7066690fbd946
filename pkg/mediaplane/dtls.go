package mediaplane

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/pion/dtls/v3"
	"github.com/pion/srtp/v3"
	"github.com/pion/transport/v5/deadline"

	"github.com/srtwhep/srtwhep/pkg/panics"
	"github.com/srtwhep/srtwhep/pkg/pionslog"
	"github.com/srtwhep/srtwhep/pkg/plane"
)

// DTLS content types (RFC 6347), the first byte of a record.
const (
	contentChangeCipherSpec = 20
	contentAlert            = 21
	contentHandshake        = 22
)

// pipeQueue is how many datagrams a handshake may have waiting: a flight
// is a few datagrams, so more means the viewer is flooding us.
const pipeQueue = 16

// maxFlightReplays bounds how often the handshake's last flight is sent
// again after the handshake detached: an honest viewer asks once or twice
// when our flight was lost.
const maxFlightReplays = 8

// exporterLabel is RFC 5764 §4.2's label for SRTP keying material.
const exporterLabel = "EXTRACTOR-dtls_srtp"

// srtpProfiles are offered in our order of preference: AES-GCM is several
// times cheaper per packet than AES-CM with HMAC-SHA1 in pion/srtp.
var srtpProfiles = []dtls.SRTPProtectionProfile{dtls.SRTP_AEAD_AES_128_GCM, dtls.SRTP_AES128_CM_HMAC_SHA1_80}

// handleDTLS passes a DTLS datagram from a validated address to its
// viewer's handshake, starting one on the first; it runs on the
// demultiplexer goroutine.
func (s *Server) handleDTLS(b []byte, from route) {
	v := s.viewerAt(from)
	if v == nil {
		s.stats.unknownAddr.Add(1)
		return
	}
	s.stats.dtlsRecords.Add(1)
	if alert := v.takeDTLS(b, from); alert {
		v.end(plane.ErrPeerClosed)
	}
}

// takeDTLS feeds b to the handshake, or answers it after the handshake
// detached; it reports an alert that ends the viewer.
func (v *Viewer) takeDTLS(b []byte, from route) (alert bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.state.Load() == stateClosed {
		return false
	}
	if v.detached {
		switch b[0] {
		case contentHandshake, contentChangeCipherSpec:
			// The viewer repeats its last flight: ours was lost. It goes
			// back the way the repeat came, so the UDP demultiplexer
			// never writes to an ICE-TCP connection, which may block.
			if v.replays < maxFlightReplays {
				v.replays++
				for _, d := range v.flight {
					v.srv.writeTo(d, from)
				}
			}
		case contentAlert:
			// A WebRTC peer sends an alert only to close or to fail, but
			// the first byte is anyone's to write: only one opened with
			// the session's keys ends the viewer.
			if v.alerts.authentic(b) {
				return true
			}
			v.srv.stats.forgedAlerts.Add(1)
		}
		return false // application data: a WebRTC viewer has none for us
	}
	if v.pipe == nil {
		if v.remote.Load() == nil {
			v.setRemote(from, v.srv.inet6)
		}
		if err := v.startHandshake(from); err != nil {
			v.log().Warn("cannot start DTLS", "media_remote", from.String(), "err", err)
			return false
		}
	}
	if !v.pipe.deliver(b) {
		v.srv.stats.droppedOther.Add(1)
	}
	return false
}

// startHandshake creates the pion/dtls server Conn over a pipe and runs
// its handshake on a goroutine of its own; v.mu is held.
func (v *Viewer) startHandshake(from route) error {
	s := v.srv
	p := newPipe(v, net.UDPAddrFromAddrPort(from.ap))
	conn, err := dtls.ServerWithOptions(p, p.addr,
		dtls.WithCertificates(s.cert),
		dtls.WithSRTPProtectionProfiles(srtpProfiles...),
		dtls.WithCipherSuites(cipherSuites...),
		dtls.WithExtendedMasterSecret(dtls.RequireExtendedMasterSecret),
		// The certificates are self-signed: trust comes from the
		// fingerprint the viewer put in its offer, checked here.
		dtls.WithClientAuth(dtls.RequireAnyClientCert),
		dtls.WithInsecureSkipVerify(true),
		dtls.WithVerifyPeerCertificate(v.fp.verify),
		// The cookie exchange proves the client can receive at its
		// address; ICE already proved that with an authenticated check,
		// so it would only cost a round trip.
		dtls.WithInsecureSkipVerifyHello(true),
		dtls.WithLoggerFactory(pionslog.Factory{Log: v.log()}),
	)
	if err != nil {
		return err
	}
	v.pipe = p
	s.spawn(func() {
		defer panics.Catch(v.log(), panics.ViewerHandshake, func(err error) *slog.Logger {
			_ = conn.Close()
			v.end(fmt.Errorf("%w: %w", plane.ErrFailed, err))
			return nil
		}, "media_remote", from.String())
		v.handshake(p, conn)
	})
	return nil
}

// handshake runs the DTLS handshake, derives the SRTP contexts and
// detaches from pion's Conn (see doc.go).
func (v *Viewer) handshake(p *pipe, conn *dtls.Conn) {
	ctx, cancel := context.WithDeadline(v.ctx, v.created.Add(v.srv.cfg.HandshakeTimeout))
	defer cancel()
	err := conn.HandshakeContext(ctx)
	var out, in *srtp.Context
	var profile srtp.ProtectionProfile
	var alerts *alertOpener
	if err == nil {
		out, in, profile, err = srtpContexts(conn)
	}
	if err == nil {
		alerts, err = newAlertOpener(conn)
	}
	if err != nil {
		_ = conn.Close()
		switch {
		case v.ctx.Err() != nil: // the viewer ended already
		case ctx.Err() != nil:
			v.end(plane.ErrHandshakeTimeout)
		default:
			v.end(fmt.Errorf("%w: DTLS handshake: %w", plane.ErrFailed, err))
		}
		return
	}
	flight := p.lastFlight()
	p.startCapture()
	_ = conn.Close() // ends pion's goroutines; close_notify lands in the capture
	cn := p.captured()

	v.mu.Lock()
	v.pipe, v.detached, v.flight, v.closeNotify, v.alerts = nil, true, flight, cn, alerts
	v.mu.Unlock()

	v.sendMu.Lock()
	v.out = out
	v.sendMu.Unlock()
	v.in.Store(in)
	v.lastSeen.Store(time.Now().UnixNano())
	// Finishing the handshake needed the random values our flights carried
	// to the media address, so it proves that address (consent.go).
	v.consentProven(time.Now().UnixNano())
	if !v.state.CompareAndSwap(stateChecking, stateConnected) {
		// Ended while the keys were being made: end saw no connected
		// viewer, so say goodbye here and drop the keys it missed.
		v.sayGoodbye()
		v.sendMu.Lock()
		v.out = nil
		v.sendMu.Unlock()
		v.in.Store(nil)
		return
	}
	close(v.connected)
	v.log().Info("viewer connected", "media_remote", v.remoteString(), "srtp", profile.String())
}

// srtpContexts exports the keying material of the negotiated profile
// (RFC 5764 §4.2: client key, server key, client salt, server salt) and
// returns the contexts for what we send and what the viewer sends.
func srtpContexts(conn *dtls.Conn) (out, in *srtp.Context, profile srtp.ProtectionProfile, err error) {
	negotiated, ok := conn.SelectedSRTPProtectionProfile()
	if !ok {
		return nil, nil, 0, errors.New("no SRTP protection profile negotiated (use_srtp missing)")
	}
	switch negotiated {
	case dtls.SRTP_AEAD_AES_128_GCM:
		profile = srtp.ProtectionProfileAeadAes128Gcm
	case dtls.SRTP_AES128_CM_HMAC_SHA1_80:
		profile = srtp.ProtectionProfileAes128CmHmacSha1_80
	default:
		return nil, nil, 0, fmt.Errorf("unsupported SRTP protection profile %v", negotiated)
	}
	keyLen, err := profile.KeyLen()
	if err != nil {
		return nil, nil, 0, err
	}
	saltLen, err := profile.SaltLen()
	if err != nil {
		return nil, nil, 0, err
	}
	state, ok := conn.ConnectionState()
	if !ok {
		return nil, nil, 0, errors.New("DTLS connection state unavailable")
	}
	km, err := state.ExportKeyingMaterial(exporterLabel, nil, 2*(keyLen+saltLen))
	if err != nil {
		return nil, nil, 0, fmt.Errorf("export keying material: %w", err)
	}
	clientKey, serverKey := km[:keyLen], km[keyLen:2*keyLen]
	clientSalt, serverSalt := km[2*keyLen:2*keyLen+saltLen], km[2*keyLen+saltLen:]
	if out, err = srtp.CreateContext(serverKey, serverSalt, profile); err != nil {
		return nil, nil, 0, fmt.Errorf("SRTP context: %w", err)
	}
	if in, err = srtp.CreateContext(clientKey, clientSalt, profile, srtp.SRTCPReplayProtection(64)); err != nil {
		return nil, nil, 0, fmt.Errorf("SRTP context: %w", err)
	}
	return out, in, profile, nil
}

// pipe is the net.PacketConn pion/dtls runs over: the demultiplexer
// delivers into it, and writes go out on the shared socket to wherever
// the viewer's media goes. It records the handshake's last flight (what
// was written since the last datagram read) and, once capturing, keeps
// the last write instead of sending it.
type pipe struct {
	v     *Viewer
	addr  *net.UDPAddr
	inbox chan []byte

	closed    chan struct{}
	closeOnce sync.Once
	deadline  *deadline.Deadline

	mu        sync.Mutex
	newFlight bool
	flight    [][]byte
	capturing bool
	capture   []byte
}

var _ net.PacketConn = (*pipe)(nil)

func newPipe(v *Viewer, addr *net.UDPAddr) *pipe {
	return &pipe{v: v, addr: addr, inbox: make(chan []byte, pipeQueue),
		closed: make(chan struct{}), deadline: deadline.New()}
}

// deliver queues a copy of b without blocking; false means it was dropped.
func (p *pipe) deliver(b []byte) bool {
	select {
	case p.inbox <- bytes.Clone(b):
		return true
	default:
		return false
	}
}

func (p *pipe) ReadFrom(b []byte) (int, net.Addr, error) {
	select {
	case d := <-p.inbox:
		p.mu.Lock()
		p.newFlight = true
		p.mu.Unlock()
		return copy(b, d), p.addr, nil
	case <-p.closed:
		return 0, nil, net.ErrClosed
	case <-p.deadline.Done():
		return 0, nil, os.ErrDeadlineExceeded
	}
}

func (p *pipe) WriteTo(b []byte, _ net.Addr) (int, error) {
	p.mu.Lock()
	if p.capturing {
		p.capture = bytes.Clone(b)
		p.mu.Unlock()
		return len(b), nil
	}
	select {
	case <-p.closed:
		p.mu.Unlock()
		return 0, net.ErrClosed
	default:
	}
	if p.newFlight {
		p.flight, p.newFlight = nil, false
	}
	p.flight = append(p.flight, bytes.Clone(b))
	p.mu.Unlock()
	if r := p.v.remote.Load(); r != nil {
		p.v.srv.writeTo(b, r.route)
	}
	return len(b), nil
}

func (p *pipe) lastFlight() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.flight)
}

func (p *pipe) startCapture() {
	p.mu.Lock()
	p.capturing = true
	p.mu.Unlock()
}

func (p *pipe) captured() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.capture
}

func (p *pipe) Close() error {
	p.closeOnce.Do(func() { close(p.closed) })
	return nil
}

func (p *pipe) LocalAddr() net.Addr                { return p.v.srv.conn.LocalAddr() }
func (p *pipe) SetDeadline(t time.Time) error      { p.deadline.Set(t); return nil }
func (p *pipe) SetReadDeadline(t time.Time) error  { p.deadline.Set(t); return nil }
func (p *pipe) SetWriteDeadline(t time.Time) error { return nil } // writes never block

// remoteFingerprint is the certificate fingerprint(s) the offer carries.
type remoteFingerprint []fingerprintValue

type fingerprintValue struct {
	hash  func([]byte) []byte
	value string // upper-case, colon-separated
}

// verify accepts the viewer's certificate when its hash matches one of
// the offer's fingerprints (RFC 8122 §5).
func (fp remoteFingerprint) verify(rawCerts [][]byte, _ [][]*x509.Certificate) error {
	if len(rawCerts) == 0 {
		return errors.New("viewer sent no DTLS certificate")
	}
	for _, f := range fp {
		if colonHex(f.hash(rawCerts[0])) == f.value {
			return nil
		}
	}
	return errors.New("viewer's DTLS certificate does not match the fingerprint in its offer")
}
