package mediaplane

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pion/dtls/v3/pkg/crypto/selfsign"

	"github.com/srtwhep/srtwhep/pkg/plane"
)

// Defaults for the zero Config.
const (
	// DefaultHandshakeTimeout bounds the time from the answer to working
	// SRTP keys: ICE checks and the DTLS handshake, over a slow link.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultConsentTimeout is RFC 7675's: a viewer that sent no valid
	// STUN check and no valid RTCP for this long is gone.
	DefaultConsentTimeout = 30 * time.Second
	// DefaultProofTimeout is RFC 7675's consent expiry: media stops to an
	// address that answered none of our consent checks for this long.
	DefaultProofTimeout = 30 * time.Second
	// DefaultMaxTCPPerClient bounds one client's ICE-TCP connections.
	DefaultMaxTCPPerClient = plane.DefaultMaxTCPPerClient
)

// janitorInterval is how often timeouts are checked; the timeouts are
// seconds long, so a quarter second of slack is invisible.
const janitorInterval = 250 * time.Millisecond

// profileLabel marks every goroutine the Server starts, and those pion/dtls
// starts from them, so a CPU or goroutine profile of the whole process
// tells the media plane's share apart.
var profileLabel = pprof.Labels("srtwhep", "mediaplane")

// Config configures a Server. Only Conn is required.
type Config struct {
	// Conn is the UDP socket every viewer shares. The Server owns it from
	// New on and closes it; sizing its kernel buffers is the caller's
	// business (pkg/sockbuf), done before New.
	Conn *net.UDPConn
	// HostIPs are the addresses of the answer's host candidates. Empty
	// means the socket's own address or, for a wildcard socket, the
	// addresses of every interface that is up (loopback only when nothing
	// else is).
	HostIPs []netip.Addr
	// PublicIPs are advertised as host candidates before HostIPs: the
	// address a NAT 1:1 or a Docker port mapping forwards to Conn.
	PublicIPs []netip.Addr
	// HandshakeTimeout ends a viewer that has no SRTP keys this long after
	// its answer; 0 means DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// ConsentTimeout ends a connected viewer that sent no valid STUN check
	// or RTCP for this long; 0 means DefaultConsentTimeout.
	ConsentTimeout time.Duration
	// ProofTimeout ends a connected UDP viewer whose media address
	// answered none of our consent checks for this long (RFC 7675: what
	// a viewer sends proves nothing, since it may spoof its source; see
	// consent.go); 0 means DefaultProofTimeout.
	ProofTimeout time.Duration
	// Certificate is the DTLS certificate; nil generates an ECDSA P-256 one.
	Certificate *tls.Certificate
	// Logger receives one line per viewer event; nil discards them.
	Logger *slog.Logger
	// TCPListener, when set, serves ICE-TCP (RFC 6544, passive; RFC 4571
	// framing) for viewers whose UDP is blocked; the answer then also
	// carries a passive TCP candidate per address. The Server owns it
	// from New on and closes it.
	TCPListener net.Listener
	// MaxTCPPerClient bounds the ICE-TCP connections open at once from
	// one client (an IPv4 address, an IPv6 /64); past it new ones are
	// closed at accept. 0 means DefaultMaxTCPPerClient.
	MaxTCPPerClient int
}

// Server terminates WebRTC transport for many viewers on one UDP socket.
type Server struct {
	cfg   Config
	conn  *net.UDPConn
	raw   syscall.RawConn
	inet6 bool // the socket is AF_INET6 (IPv4 peers need mapped addresses)
	log   *slog.Logger

	cert        tls.Certificate
	fingerprint string   // sha-256 of cert, "AB:CD:…"
	candidates  []string // a=candidate values, without "candidate:"

	mu       sync.RWMutex
	byUfrag  map[string]*iceCreds
	byAddr   map[route]*Viewer
	viewers  map[*Viewer]struct{}
	tcpConns map[*tcpConn]struct{}
	closed   bool
	// tcpLimit caps ICE-TCP connections per client and in all.
	tcpLimit *plane.TCPLimit

	// fd is the shared socket's descriptor, which Senders hand to
	// sendmmsg directly (see sendDirect); fdMu, read-held around each such
	// call, keeps Close from closing it, and a reused number, under them.
	fd       uintptr
	fdMu     sync.RWMutex
	fdClosed bool

	// gso is cleared for good the first time the kernel refuses a
	// segmented send.
	gso   atomic.Bool
	stats counters
	// consentLogAt is when the last consent failure was logged (unix ns).
	consentLogAt atomic.Int64

	// Used by the demultiplexer goroutine only.
	demux demuxState

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New builds a Server on cfg.Conn and starts nothing: Start does. When it
// fails, cfg.Conn is left open for the caller to close.
func New(cfg Config) (*Server, error) {
	if cfg.Conn == nil {
		return nil, errors.New("mediaplane: Config.Conn is nil")
	}
	var tcpPort int
	if cfg.TCPListener != nil {
		ta, ok := cfg.TCPListener.Addr().(*net.TCPAddr)
		if !ok {
			return nil, fmt.Errorf("mediaplane: TCPListener is not a TCP listener (%T)", cfg.TCPListener.Addr())
		}
		tcpPort = ta.Port
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.ConsentTimeout <= 0 {
		cfg.ConsentTimeout = DefaultConsentTimeout
	}
	if cfg.ProofTimeout <= 0 {
		cfg.ProofTimeout = DefaultProofTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	raw, err := cfg.Conn.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("mediaplane: %w", err)
	}
	s := &Server{
		cfg: cfg, conn: cfg.Conn, raw: raw, log: log,
		byUfrag:  map[string]*iceCreds{},
		byAddr:   map[route]*Viewer{},
		viewers:  map[*Viewer]struct{}{},
		tcpConns: map[*tcpConn]struct{}{},
		tcpLimit: plane.NewTCPLimit(cfg.MaxTCPPerClient, plane.MaxTCPConns, log),
	}
	s.demux.rtcp = make([]byte, 0, maxDatagram)
	if s.inet6, err = socketIsInet6(raw); err != nil {
		return nil, fmt.Errorf("mediaplane: socket family: %w", err)
	}
	setDontFragment(raw, s.inet6)
	if err := raw.Control(func(fd uintptr) { s.fd = fd }); err != nil {
		return nil, fmt.Errorf("mediaplane: socket descriptor: %w", err)
	}
	s.gso.Store(true)
	if cfg.Certificate != nil {
		s.cert = *cfg.Certificate
	} else if s.cert, err = selfsign.GenerateSelfSigned(); err != nil {
		return nil, fmt.Errorf("mediaplane: generate DTLS certificate: %w", err)
	}
	if len(s.cert.Certificate) == 0 {
		return nil, errors.New("mediaplane: DTLS certificate has no DER bytes")
	}
	s.fingerprint = colonHex(sha256Sum(s.cert.Certificate[0]))
	if s.candidates, err = hostCandidates(cfg, s.conn.LocalAddr().(*net.UDPAddr), tcpPort); err != nil {
		return nil, err
	}
	// Viewers' handshakes derive from ctx, so it exists before Start;
	// Close cancels it.
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Start starts the Server's goroutines (the demultiplexer, the janitor
// and, with ICE-TCP, the acceptor); Close ends them. It is called once,
// before the first NewViewer.
func (s *Server) Start() {
	s.spawn(s.readLoop)
	s.spawn(s.janitor)
	if s.cfg.TCPListener != nil {
		s.spawn(s.acceptTCP)
	}
}

// spawn runs f on a goroutine counted in s.wg and labelled as the media
// plane's.
func (s *Server) spawn(f func()) {
	s.wg.Go(func() {
		pprof.Do(s.ctx, profileLabel, func(context.Context) { f() })
	})
}

// Close ends every viewer (RTCP BYE and DTLS close_notify to those
// connected), closes the socket and the ICE-TCP listener and connections,
// and waits for the Server's goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	vs := make([]*Viewer, 0, len(s.viewers))
	for v := range s.viewers {
		vs = append(vs, v)
	}
	s.mu.Unlock()
	for _, v := range vs {
		v.end(plane.ErrServerClosed)
	}
	s.cancel()
	s.fdMu.Lock()
	s.fdClosed = true
	s.fdMu.Unlock()
	err := s.conn.Close()
	if s.cfg.TCPListener != nil {
		_ = s.cfg.TCPListener.Close()
		s.mu.Lock()
		conns := make([]*tcpConn, 0, len(s.tcpConns))
		for c := range s.tcpConns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		for _, c := range conns {
			c.close()
		}
	}
	s.wg.Wait()
	return err
}

// LocalAddr is the shared socket's address.
func (s *Server) LocalAddr() *net.UDPAddr { return s.conn.LocalAddr().(*net.UDPAddr) }

// TCPAddr is the ICE-TCP listener's address, nil without one.
func (s *Server) TCPAddr() net.Addr {
	if s.cfg.TCPListener == nil {
		return nil
	}
	return s.cfg.TCPListener.Addr()
}

// Fingerprint is the sha-256 fingerprint of the DTLS certificate, as the
// answer's a=fingerprint carries it.
func (s *Server) Fingerprint() string { return s.fingerprint }

// Candidates are the a=candidate values (without "candidate:") every
// answer carries: what an ICE restart's answer fragment lists again.
func (s *Server) Candidates() []string { return append([]string(nil), s.candidates...) }

// janitor ends viewers whose handshake or consent ran out, and drives
// every viewer's consent checks (consentTick): one goroutine for all.
func (s *Server) janitor() {
	t := time.NewTicker(janitorInterval)
	defer t.Stop()
	var all []*Viewer
	var creds []*iceCreds
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			// Collected under the lock, checked and sent outside it.
			all, creds = all[:0], creds[:0]
			s.mu.RLock()
			for v := range s.viewers {
				all = append(all, v)
				creds = append(creds, v.creds)
			}
			s.mu.RUnlock()
			for i, v := range all {
				err := v.expired(now, s.cfg.HandshakeTimeout, s.cfg.ConsentTimeout)
				if err == nil {
					err = s.consentTick(v, creds[i], now.UnixNano())
				}
				if err != nil {
					v.end(err)
				}
				all[i], creds[i] = nil, nil
			}
		}
	}
}

// writeTo sends one datagram outside the media path (STUN, DTLS, RTCP),
// on the shared socket or as one frame on an ICE-TCP connection. A
// refused send is counted: the peer sees it as loss and repeats.
func (s *Server) writeTo(b []byte, to route) {
	if to.tcp != nil {
		if to.tcp.write(b) != nil {
			s.stats.sendErrors.Add(1)
		}
		return
	}
	if s.writeUDP(b, to.ap) != nil {
		s.stats.sendErrors.Add(1)
	}
}

func sha256Sum(b []byte) []byte {
	h := sha256.Sum256(b)
	return h[:]
}

// colonHex renders a fingerprint as SDP wants it (RFC 8122): upper-case
// hex bytes separated by colons.
func colonHex(b []byte) string {
	const digits = "0123456789ABCDEF"
	var sb strings.Builder
	sb.Grow(len(b) * 3)
	for i, c := range b {
		if i > 0 {
			sb.WriteByte(':')
		}
		sb.WriteByte(digits[c>>4])
		sb.WriteByte(digits[c&0xF])
	}
	return sb.String()
}
