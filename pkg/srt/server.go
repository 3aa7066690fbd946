// Package srt is the SRT transport: a libsrt listener (via srtgo) that
// parses the streamid during the handshake, asks Config.Admit, and hands
// each accepted publisher to Config.Serve as an io.Reader, and each
// accepted reader (read:PATH, m=request) to Config.ServeRead, which writes
// to it (AdmitRead decides those). It knows nothing of MPEG-TS; of the
// access policy and the hub it only knows their refusals, which it maps to
// SRT reject reasons in one table (reject.go).
//
// srtgo is used in blocking mode only: in its non-blocking mode a Close does
// not wake a pending Read or Accept (see TOOLCHAIN.md §1), which would leak
// goroutines on shutdown.
package srt

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/haivision/srtgo"

	"github.com/srtwhep/srtwhep/pkg/panics"
)

// rcvTimeout is how often a blocked Read wakes up to check ctx, Close and
// ReadTimeout.
const rcvTimeout = 250 * time.Millisecond

// srtoRcvTimeo is SRTO_RCVTIMEO, which srtgo has no constant for.
const srtoRcvTimeo = 14

// pendingTTL drops handshake records whose connection never reached
// Accept (e.g. the caller's passphrase was wrong). The listen callback runs
// on the handshake's conclusion, and a connection that completes is
// accepted within milliseconds, so a record older than a few seconds is a
// failed handshake's. At 30 s a flood of 100 wrong passphrases a second
// filled the 1024 records in 10 s and real publishers got overload (1402);
// at 5 s such a flood holds about 500.
const pendingTTL = 5 * time.Second

// Server is the SRT listener. Create it with New and start it with Run.
type Server struct {
	cfg   Config
	log   *slog.Logger // component=srt
	base  *slog.Logger // for libsrt's own lines, which carry component=libsrt
	host  string
	port  uint16
	ready chan struct{}
	addr  atomic.Pointer[net.UDPAddr]
	ran   atomic.Bool
	// churn counts handshakes and departures since the last trim tick;
	// trims counts heap trims (see heaptrim.go).
	churn atomic.Uint64
	trims atomic.Uint64
	// frees counts the Go heap returns after a publisher left, left asks
	// for one (see heaptrim.go).
	frees atomic.Uint64
	left  atomic.Bool
	// rejects summarises the listen callback's rejections.
	rejects rejectLog

	maxPubs, maxPubsPerIP int

	mu      sync.Mutex
	pending map[int]pendingConn // by SRT socket id, from the listen callback
	conns   map[*Conn]struct{}
	// pubs counts accepted publisher connections by publisherKey,
	// pubsAll in total (publimit.go).
	pubs    map[string]int
	pubsAll int
}

type pendingConn struct {
	id     StreamID
	remote string
	at     time.Time
	// pubKey is the key the publisher is counted under, "" for a reader.
	pubKey string
}

// New validates cfg; it binds nothing and starts nothing.
func New(cfg Config) (*Server, error) {
	host, portStr, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("srt listen address %q: %w (use HOST:PORT, e.g. \":8890\")", cfg.Listen, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("srt listen address %q: port must be 0-65535", cfg.Listen)
	}
	if host == "" {
		host = "0.0.0.0"
	} else if net.ParseIP(host) == nil {
		return nil, fmt.Errorf("srt listen address %q: host must be an IP address", cfg.Listen)
	}
	switch {
	case cfg.Serve == nil:
		return nil, errors.New("Serve is required")
	case cfg.Latency < 0:
		return nil, fmt.Errorf("latency %s must not be negative", cfg.Latency)
	case cfg.ReadTimeout < 0:
		return nil, fmt.Errorf("read timeout %s must not be negative", cfg.ReadTimeout)
	case cfg.MaxPublishers < 0 || cfg.MaxPublishersPerIP < 0:
		return nil, fmt.Errorf("publisher caps %d and %d must not be negative", cfg.MaxPublishers, cfg.MaxPublishersPerIP)
	case !slices.Contains([]int{0, 16, 24, 32}, cfg.PBKeyLen):
		return nil, fmt.Errorf("pbkeylen %d must be 0, 16, 24 or 32", cfg.PBKeyLen)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{
		cfg:     cfg,
		log:     log.With("component", "srt"),
		base:    log,
		host:    host,
		port:    uint16(port),
		ready:   make(chan struct{}),
		pending: map[int]pendingConn{},
		conns:   map[*Conn]struct{}{},
		pubs:    map[string]int{},

		maxPubs:      cmp.Or(cfg.MaxPublishers, DefaultMaxPublishers),
		maxPubsPerIP: cmp.Or(cfg.MaxPublishersPerIP, DefaultMaxPublishersPerIP),
	}, nil
}

// Ready is closed once the listener is bound.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addr is the bound address (valid after Ready).
func (s *Server) Addr() *net.UDPAddr { return s.addr.Load() }

// Run binds, accepts publishers until ctx ends, then closes the listener and
// every conn and waits for every Serve goroutine. It returns nil on a clean
// shutdown. Init must have been called.
func (s *Server) Run(ctx context.Context) error {
	if !s.ran.CompareAndSwap(false, true) {
		return errors.New("Run called twice on the same Server")
	}
	defer s.rejects.close() // last: the listener's callbacks have stopped
	opts := map[string]string{
		"blocking":  "1",
		"mode":      "listener",
		"transtype": "live",
	}
	if s.cfg.Latency > 0 {
		opts["latency"] = strconv.FormatInt(s.cfg.Latency.Milliseconds(), 10)
	}
	ln := srtgo.NewSrtSocket(s.host, s.port, opts)
	if ln == nil {
		return errors.New("cannot create the listening socket (was srt.Init called?)")
	}
	ln.SetListenCallback(s.onHandshake)
	bufSize := s.setSocketBuffer(ln)
	if err := ln.Listen(16); err != nil {
		runtime.SetFinalizer(ln, nil) // Listen already closed it
		return fmt.Errorf("srt listen on udp %s: %w (is the port in use?)", s.cfg.Listen, err)
	}
	closeListener := sync.OnceFunc(closeSocket(ln))
	defer closeListener()

	addr := &net.UDPAddr{IP: net.ParseIP(s.host), Port: boundPort(int(ln.GetSocket()))}
	s.addr.Store(addr)
	libsrtLog.Store(s.base)
	defer libsrtLog.CompareAndSwap(s.base, nil)
	s.log.Info("srt listening", "addr", addr.String())
	s.reportSocketBuffer(bufSize)
	close(s.ready)

	connCtx, cancelConns := context.WithCancel(ctx)
	defer cancelConns()
	var wg sync.WaitGroup
	// Accept blocks in C; closing the listener is the only way to wake it.
	stopWatch := make(chan struct{})
	wg.Go(func() {
		select {
		case <-ctx.Done():
		case <-stopWatch:
		}
		closeListener()
	})
	stopTrim := make(chan struct{})
	wg.Go(func() { s.trimLoop(stopTrim) })

	var runErr error
	for {
		sock, peer, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if errors.Is(err, srtgo.EInvSock) || errors.Is(err, srtgo.ENoListen) || errors.Is(err, &srtgo.SrtSocketClosed{}) {
				runErr = fmt.Errorf("srt listener on %s failed: %w", addr, err)
				break
			}
			if errors.Is(err, srtgo.EConnLost) {
				// The caller left between its handshake and this accept:
				// srtgo's Accept fails configuring the broken socket (and
				// libsrt's collector closes it). Only that connection
				// failed; waiting here would let libsrt's backlog fill
				// and refuse the callers that stay (SRT_REJ_BACKLOG).
				s.rejects.warn(s.log, "srt caller left before accept", "srt caller left before accept", "unknown", "err", err.Error())
				continue
			}
			s.log.Warn("srt accept failed", "err", err)
			// A persistent error must not turn this loop into a busy loop.
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		c := s.adopt(connCtx, sock, peer)
		if c == nil {
			continue
		}
		wg.Go(func() {
			s.serve(connCtx, c)
			s.churned()
		})
	}

	close(stopWatch)
	close(stopTrim)
	closeListener()
	cancelConns()
	s.mu.Lock()
	for c := range s.conns {
		c.closeWith("server shutdown")
	}
	s.mu.Unlock()
	wg.Wait()
	return runErr
}

// adopt turns an accepted socket into a Conn, using what the listen
// callback recorded for it.
func (s *Server) adopt(ctx context.Context, sock *srtgo.SrtSocket, peer *net.UDPAddr) *Conn {
	id := int(sock.GetSocket())
	s.mu.Lock()
	p, ok := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if !ok {
		// Cannot happen unless libsrt skipped the callback; without a
		// streamid the stream has nowhere to go.
		s.log.Warn("srt connection without handshake record, closing", "remote", peer.String())
		closeSocket(sock)()
		return nil
	}
	if err := sock.SetSockOptInt(srtoRcvTimeo, int(rcvTimeout.Milliseconds())); err != nil {
		s.log.Warn("cannot set the receive timeout, closing", "path", p.id.Path, "remote", p.remote, "err", err)
		closeSocket(sock)()
		return nil
	}
	readTimeout := s.cfg.ReadTimeout
	if p.id.Reading() {
		// A reader sends no data, and its writes wake up like reads do.
		readTimeout = 0
		if err := sock.SetSockOptInt(srtoSndTimeo, int(rcvTimeout.Milliseconds())); err != nil {
			s.log.Warn("cannot set the send timeout, closing", "path", p.id.Path, "remote", p.remote, "err", err)
			closeSocket(sock)()
			return nil
		}
	}
	c := newConn(ctx, sock, p.id, p.remote, readTimeout)
	c.pubKey = p.pubKey
	s.mu.Lock()
	// The callback checked the caps against the publishers accepted
	// then; a burst of handshakes completed since is caught here,
	// before the conn gets a goroutine.
	if c.pubKey != "" {
		if err := s.checkPublisherLocked(c.pubKey); err != nil {
			s.mu.Unlock()
			s.rejects.warn(s.log, "srt publisher closed|cap", "srt publisher closed at accept", p.remote,
				"path", p.id.Path, "remote", p.remote, "err", err.Error())
			closeSocket(sock)()
			return nil
		}
		s.countPublisherLocked(c.pubKey, 1)
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	return c
}

func (s *Server) serve(ctx context.Context, c *Conn) {
	if c.id.Reading() {
		s.serveRead(ctx, c)
		return
	}
	log := s.log
	if s.cfg.PublisherLog != nil {
		log = s.cfg.PublisherLog(log, c.Path(), c.Remote())
	}
	log = log.With("path", c.Path(), "remote", c.Remote())
	log.Info("publisher connected")
	err := s.servePublisher(ctx, c, log)
	s.publisherLeft()
	c.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.countPublisherLocked(c.pubKey, -1)
	s.mu.Unlock()

	reason := c.endReason()
	lvl := slog.LevelInfo
	// On shutdown or kick the closing socket makes Serve return the
	// context's error or EOF: that is the reason already recorded, not a
	// stream failure.
	if err != nil && !errors.Is(err, io.EOF) && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
		reason = err.Error()
		lvl = slog.LevelWarn
	}
	st := c.Stats()
	log.Log(context.Background(), lvl, "publisher closed", "reason", reason,
		"duration", time.Since(c.since).Round(time.Millisecond), "bytes", st.Bytes,
		"lost", st.PacketsLost, "dropped", st.PacketsDropped)
}

// servePublisher is Config.Serve, which a panic ends like an error: the
// publisher's own goroutine unwinds (ingest's deferred cleanup runs), its
// conn closes, and the other publishers and viewers never notice.
func (s *Server) servePublisher(ctx context.Context, c *Conn, log *slog.Logger) (err error) {
	defer panics.Catch(log, panics.SRTPublisher, func(e error) *slog.Logger { err = e; return nil })
	return s.cfg.Serve(ctx, c)
}

// Conns is a snapshot of the connected publishers.
func (s *Server) Conns() []ConnInfo {
	s.mu.Lock()
	cs := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		if !c.id.Reading() {
			cs = append(cs, c)
		}
	}
	s.mu.Unlock()
	out := make([]ConnInfo, 0, len(cs))
	for _, c := range cs {
		out = append(out, ConnInfo{Path: c.Path(), Remote: c.Remote(), Since: c.since, Stats: c.Stats()})
	}
	slices.SortFunc(out, func(a, b ConnInfo) int { return a.Since.Compare(b.Since) })
	return out
}
