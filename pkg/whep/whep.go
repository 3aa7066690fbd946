// Package whep is the WHEP server (draft-ietf-wish-whep, HTTP mechanics of
// RFC 9725): the HTTP contract (POST, PATCH for trickle and ICE restarts,
// DELETE), the codec choice read from the offer (parsed once, into
// pkg/sdpoffer's model, as are the PATCH's fragments), and the session
// registry. What it only uses lives beside it: the viewer limits (offer
// rate, pending offers, handshake slots) in pkg/admission, the TURN
// credentials in pkg/turncred, the problem bodies in pkg/httpproblem,
// the CORS headers in pkg/httpcors, the rate-limited refusal lines in
// pkg/refusallog, the server-sent events extension in pkg/whepevents
// (a whep.Extension), and the layer selection with each viewer's switch
// between renditions in pkg/wheplayer (an Extension and the
// SenderSource). Each session turns an SDP offer into a WebRTC
// connection on the media plane and hands it the viewer's sender
// (pkg/rtpsend), which writes the path's access units (and its Opus
// frames, when the path and the offer have audio), with sender reports
// that keep the two in lip sync.
//
// The connection comes from the media plane the caller passes in
// (Config.Plane, plane.go: pkg/mediaplane, which this package does not
// import). All sessions share its one ICE UDP socket (plus an optional
// ICE-TCP listener), so a deployment publishes a single media port.
//
// A viewer outlives its publisher for the path's grace period (kept by the
// hub): the next publisher's stream continues the same session with
// contiguous RTP sequence numbers and timestamps (see hub.Timeline). When the
// path ends for good, every viewer of it is closed cleanly: an RTCP BYE,
// then the PeerConnection's close with its DTLS close_notify, which the
// browser sees at once as a closed connection instead of waiting for ICE to
// time out; the player page is expected to reconnect by posting a new offer.
//
// A session's sender (pkg/rtpsend) is a plane.Stepper: it never blocks on
// anything but its connection's writes, and the plane runs it. The plane
// steps a UDP viewer's sender on its fixed writer pool, so it costs no
// goroutine (measured by TestGoroutinesPerViewer); an ICE-TCP viewer's,
// whose writes block, runs on a goroutine of its own (plane.Run).
package whep

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/pkg/admission"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/recent"
	"github.com/srtwhep/srtwhep/pkg/refusallog"
	"github.com/srtwhep/srtwhep/pkg/rtpsend"
)

// Server is the WHEP server. New validates, Run binds and serves.
type Server struct {
	cfg Config
	log *slog.Logger

	started atomic.Bool
	ready   chan struct{}
	// bound is set by Run once the plane has bound its sockets.
	bound   atomic.Bool
	baseCtx context.Context // set by Run before ready closes
	// admission holds the offer buckets and the pending and handshake
	// slots every viewer passes before it watches.
	admission *admission.Viewers

	mu       sync.Mutex
	closing  bool
	sessions map[string]*session
	wg       sync.WaitGroup

	stats serverCounters
	// ended remembers recently ended sessions (id → path), so a repeated
	// DELETE is 200.
	ended *recent.Set
	// refusals logs refused requests, at most one line per kind a second.
	refusals *refusallog.Log
	// silentClosed logs the sessions closed because their viewer never
	// started ICE like refusals, one line a second: a flood of such
	// offers must not flood the log with a line per offer.
	silentClosed *refusallog.Log
	// draining: Drain was called; new offers are refused.
	draining atomic.Bool
}

// New checks cfg and fills in defaults. It starts nothing.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.check()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:          cfg,
		log:          log,
		ready:        make(chan struct{}),
		admission:    admission.NewViewers(cfg.Limits),
		sessions:     make(map[string]*session),
		ended:        recent.New(endedWindow, endedMax),
		refusals:     refusallog.New(log, "offer refused"),
		silentClosed: refusallog.New(log, "viewer closed"),
	}
	return s, nil
}

// LiveViewers is how many of client key's viewers (auth.Key of its
// address) are connected now: what its offer bucket has grown by.
func (s *Server) LiveViewers(key string) int { return s.admission.Offers.Live(key) }

// Run binds the ICE sockets, closes Ready and serves until ctx ends. Then it
// closes every session (viewers see their PeerConnection close) and returns
// once all session goroutines and the muxes are gone.
func (s *Server) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("whep: Run called twice; a Server runs once")
	}
	p := s.cfg.Plane
	if err := p.Start(); err != nil {
		return err
	}
	// Sessions outlive ctx until they are told why they end: detached, and
	// cancelled below with errServerShutdown as the cause they log.
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)

	s.mu.Lock()
	s.baseCtx = runCtx
	s.mu.Unlock()
	s.bound.Store(true)
	close(s.ready)
	s.log.Info("whep ready", "udp", p.UDPAddr().String(), "tcp", p.TCPAddr())
	tick := time.NewTicker(refusallog.Every)
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-tick.C:
			s.refusals.Flush(false)
			s.silentClosed.Flush(false)
			s.admission.Offers.Expire()
		case <-ctx.Done():
		}
	}
	s.refusals.Flush(true)
	s.silentClosed.Flush(true)

	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	cancel(errServerShutdown)
	s.wg.Wait()
	p.Close()
	return nil
}

// Ready is closed once Run has bound its sockets.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// UDPAddr is the bound ICE UDP address, nil before Ready.
func (s *Server) UDPAddr() net.Addr {
	if s.bound.Load() {
		return s.cfg.Plane.UDPAddr()
	}
	return nil
}

// TCPAddr is the bound ICE-TCP address, "" when ICE-TCP is off or before
// Ready.
func (s *Server) TCPAddr() string {
	if s.bound.Load() {
		return s.cfg.Plane.TCPAddr()
	}
	return ""
}

// addSession registers sess and counts its goroutine in the server's
// WaitGroup; it refuses once shutdown has begun, so Wait never races Add.
func (s *Server) addSession(sess *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.sessions[sess.id] = sess
	s.wg.Add(1)
	return true
}

func (s *Server) removeSession(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[id]
	delete(s.sessions, id)
	return sess
}

func (s *Server) lookupSession(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// HasSession reports whether session id is open on path.
func (s *Server) HasSession(path, id string) bool {
	sess := s.lookupSession(id)
	return sess != nil && sess.path == path
}

// Drain begins a shutdown without a black screen: new offers are refused
// from now on (503, so a load balancer retries elsewhere). It returns the
// paths of the open sessions, whose viewers the caller may tell to move
// (whepevents.Streams.Drain), and how many sessions there are; the caller
// then stops the server, which ends those left.
func (s *Server) Drain() (paths []string, sessions int) {
	s.draining.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]bool)
	for _, sess := range s.sessions {
		if !seen[sess.path] {
			seen[sess.path] = true
			paths = append(paths, sess.path)
		}
	}
	return paths, len(s.sessions)
}

// running returns the media plane and the base context once Run is
// serving, or a reason to refuse.
func (s *Server) running() (Plane, context.Context, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closing:
		return nil, nil, errServerShutdown
	case s.draining.Load():
		return nil, nil, errServerDraining
	case !s.bound.Load():
		return nil, nil, errors.New("server is starting")
	}
	return s.cfg.Plane, s.baseCtx, nil
}

// Reasons a session ends, as logged in "viewer closed", besides its
// connection's (plane.ErrPeerClosed and the rest).
var (
	// errServerShutdown is also why the plane, closing with the server,
	// ends the connections left.
	errServerShutdown = plane.ErrServerClosed
	errServerDraining = errors.New("server is draining for a restart; post the offer to another server")
	errKicked         = errors.New("kicked")
	errDeleted        = errors.New("deleted by the client")
	errPublisherGone  = rtpsend.ErrPublisherGone
)
