// Package whep is the WHEP server (draft-ietf-wish-whep, HTTP mechanics of
// RFC 9725): the HTTP contract (POST, PATCH for trickle and ICE restarts,
// DELETE), the codec choice read from the offer (parsed once, into
// pkg/sdpoffer's model), and the session registry. What it only uses
// lives beside it: the per-client offer rate and the slot tables in
// pkg/admission, the TURN credentials in pkg/turncred, the problem bodies
// in pkg/httpproblem, and the server-sent events extension in
// pkg/whepevents (a whep.Extension). Each session turns an SDP offer into a WebRTC
// connection on the media plane and hands it the
// viewer's sender (pkg/rtpsend), which writes the path's access units (and
// its Opus frames, when the path and the offer have audio), with sender
// reports that keep the two in lip sync.
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
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/pkg/admission"
	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/events"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/rtpsend"
	"github.com/srtwhep/srtwhep/pkg/turncred"
)

// Source hands out readers of a path's access units. cmd adapts *hub.Hub to
// it. Errors are the hub's sentinels (wrapped or not): hub.ErrNoPublisher
// (also for an unknown path) → 409 + Retry-After, hub.ErrPathFull /
// hub.ErrServerFull → 503.
type Source interface {
	AddReader(path, session string) (Reader, error)
	// AddTranscodedReader reads the path's video transcoded to H.264
	// (hub.Hub.AddPendingTranscodedReader), for a viewer that cannot take
	// the original; hub.ErrNoPublisher when the path makes no such
	// rendition.
	AddTranscodedReader(path, session string) (Reader, error)
}

// SourceFuncs is a Source made of functions that return a concrete
// reader type R (cmd/srtwhep passes the hub's AddPendingReader and
// AddPendingTranscodedReader).
type SourceFuncs[R Reader] struct {
	Add, AddTranscoded func(path, session string) (R, error)
}

func (f SourceFuncs[R]) AddReader(path, session string) (Reader, error) {
	return asReader(f.Add(path, session))
}

func (f SourceFuncs[R]) AddTranscodedReader(path, session string) (Reader, error) {
	return asReader(f.AddTranscoded(path, session))
}

// asReader never puts a typed nil inside the interface.
func asReader[R Reader](r R, err error) (Reader, error) {
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Reader is one viewer's reservation on a path. It queues nothing until
// Attach or AttachAV, so a viewer still in ICE costs no queue, and takes
// no seat under the reader caps until Claim. From then
// on the session's sender reads it (rtpsend.Source: the frames, video or
// audio, in the order the publisher wrote them, marked CatchUp when part
// of the catch-up burst a new viewer starts from). Close releases the
// reservation and is called exactly once. *hub.Reader implements it.
type Reader interface {
	// HasAudio reports whether the path had audio when the reader was
	// added; the session offers audio only then.
	HasAudio() bool
	// Info is what the path publishes, as far as known: the answer's
	// video codec follows it (sdpoffer.Offer.ForStream).
	Info() av.StreamInfo
	Attach()   // video only
	AttachAV() // video and audio
	// Claim takes the reader's seat under the path's and the server's
	// reader caps, when its viewer starts ICE (claimReader); until then
	// the reader counts against no cap. hub.ErrPathFull or
	// hub.ErrServerFull when a cap was reached meanwhile.
	Claim() error
	// Dropped counts the access units discarded for a slow viewer.
	Dropped() uint64
	Close()
	rtpsend.Source
}

// Extension is a WHEP extension served beside the sessions
// (pkg/whepevents).
type Extension interface {
	// Link is a Link header value for the 201 of session id on path.
	Link(path, id string) string
	// SessionEnded is called once each session has ended.
	SessionEnded(id string)
}

// Authorizer is the access policy as the WHEP server uses it.
type Authorizer interface {
	CheckViewer(ctx context.Context, v auth.Viewer) error
	// ViewerAuthRequired reports whether watching path takes a token or
	// the hook's consent, so a request without one need not be judged.
	ViewerAuthRequired(path string) bool
}

// Config of the server. Zero durations and limits take the defaults below.
type Config struct {
	// Plane makes every viewer's WebRTC connection (mediaplane.Plane);
	// the Server starts it in Run and closes it after the last session.
	Plane Plane
	// ICEServers are sent to viewers as Link headers; the server itself uses
	// none (it has host candidates, rewritten by PublicIPs).
	ICEServers []turncred.Server

	HandshakeTimeout time.Duration // offer → connected; default 10 s

	// AllowOrigin is the Access-Control-Allow-Origin value; default "*".
	AllowOrigin string
	// MaxBodyBytes bounds offers and PATCH bodies; default 64 KiB.
	MaxBodyBytes int64
	// MaxHandshakes bounds the handshakes in flight (the viewer's first
	// ICE check → connected: the DTLS work); a viewer whose ICE starts
	// while every slot is taken is closed. Default 32.
	MaxHandshakes int
	// MaxHandshakesPerClient bounds them per client address (per /64 for
	// IPv6), so one client cannot take every slot. Default
	// DefaultMaxHandshakesPerClient, at most MaxHandshakes.
	MaxHandshakesPerClient int
	// ICEStartTimeout closes an answered offer whose viewer sent no ICE
	// check within it, freeing its pending slot and its reader. Default
	// DefaultICEStartTimeout, at most HandshakeTimeout.
	ICEStartTimeout time.Duration
	// OfferRate and OfferBurst are each client's token bucket for POSTs
	// (per /64 for IPv6): OfferRate a second sustained, OfferBurst at
	// once; beyond it a POST gets 429 + Retry-After. Both grow with the
	// client's connected viewers (admission.OfferBuckets). Defaults
	// admission.DefaultOfferRate, admission.DefaultOfferBurst.
	OfferRate, OfferBurst int
	// MaxPendingOffers bounds the answered offers whose viewer has not
	// started ICE yet; beyond it a POST gets 503 + Retry-After. Per
	// client, they and the handshakes in flight together are bounded by
	// MaxHandshakesPerClient. Default DefaultMaxPendingOffers.
	MaxPendingOffers int

	Source Source
	// Demand, when set, is asked before a viewer's reader is added, so an
	// edge can pull the path from its source first (pkg/edge); the POST
	// waits meanwhile. An error is the answer: Timeout() → 504, wrapping
	// hub.ErrNoPublisher → 404 (the source refused), else 502.
	Demand func(ctx context.Context, path string) error
	// PublicURL, when set (https://edge1.example.com, optionally with a
	// path prefix), makes every session URL handed out (Location) absolute
	// under it, so behind a load balancer a session's PATCH and DELETE
	// reach the server that holds it.
	PublicURL string
	// MaxResendBitrate bounds what all viewers' NACKs get resent, in
	// bit/s (rtpsend.Resends); 0: each viewer's own bound only.
	MaxResendBitrate int64
	// Problem, when set, says why a path's viewers would get no picture:
	// its last publisher was refused (asked only when the path has no
	// publisher), or its live one sends nothing a browser can decode. A
	// POST then gets 409 + Retry-After with the text, which names the
	// encoder's fix, instead of "no publisher" or a 201 and a black
	// screen.
	Problem func(path string) (StreamProblem, bool)
	// Extension, when set, is served beside the sessions (the server-sent
	// events, pkg/whepevents): every 201 carries its Link, and it is told
	// of every session's end.
	Extension Extension
	// Authorizer decides whether a viewer may watch a path (nil: everyone
	// may). Its *auth.Denied answers are mapped to HTTP statuses here.
	Authorizer Authorizer
	// Events receives reader.opened when a viewer starts receiving media
	// (ICE connected, attached to the path) and reader.closed when that
	// viewer's session ends (nil: none).
	Events events.Func
	Logger *slog.Logger

	// BeforeWrite, when set, is called by a session's sender before it
	// writes each frame (video or audio); a non-nil channel it returns
	// holds that session's writes until the channel is closed (or the
	// session ends), without holding any other session's. It exists so
	// integration tests can stall one real viewer; production leaves it
	// nil.
	BeforeWrite func(session string) (hold <-chan struct{})
}

// Defaults for the zero values of Config.
const (
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultMaxBodyBytes     = 64 << 10
	DefaultMaxHandshakes    = 32
	// Half of the default total: a household or office behind one NAT
	// rarely starts more viewers at the same moment, and what is left is
	// enough for everyone else.
	DefaultMaxHandshakesPerClient = 16
	// A pending offer holds a reader and a connection that waits for a
	// check: memory only. 512 of them leave room for 32 clients each at
	// its per-client cap before a newcomer is refused.
	DefaultMaxPendingOffers = 512
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
	// offers is the per-client token bucket every POST passes first.
	offers *admission.OfferBuckets
	// pending are the answered offers waiting for their viewer's first
	// ICE check, handshakes those whose DTLS is under way; each capped in
	// total, handshakes per client too.
	pending, handshakes *admission.Slots
	// unproven caps a client's answered offers not yet connected, pending
	// and handshaking together, at MaxHandshakesPerClient: taken at the
	// POST, so a crowd behind one address is refused at once (503 +
	// Retry-After) rather than answered and closed when its ICE starts
	// with the address's handshake slots taken, which costs a browser its
	// whole connect timeout.
	unproven *admission.Slots

	mu       sync.Mutex
	closing  bool
	sessions map[string]*session
	wg       sync.WaitGroup

	stats serverCounters
	// ended remembers recently ended sessions, so a repeated DELETE is 200.
	ended *endedSessions
	// refusals logs refused requests, at most one line per kind a second.
	refusals *refusalLog
	// latency is the server's share of each live frame's delay.
	latency rtpsend.Latency
	// resends is the server-wide retransmission budget (rtpsend.Resends).
	resends rtpsend.Resends
	// silentClosed logs the sessions closed because their viewer never
	// started ICE like refusals, one line a second: a flood of such
	// offers must not flood the log with a line per offer.
	silentClosed *refusalLog
	// draining: Drain was called; new offers are refused.
	draining atomic.Bool
}

// New checks cfg and fills in defaults. It starts nothing.
func New(cfg Config) (*Server, error) {
	if cfg.Source == nil {
		return nil, errors.New("whep: Config.Source is nil; pass the hub adapter")
	}
	if cfg.Plane == nil {
		return nil, errors.New("whep: Config.Plane is nil; pass the media plane (mediaplane.NewPlane)")
	}
	if cfg.PublicURL != "" {
		u, err := url.Parse(cfg.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("whep: public URL %q must be an absolute http(s) URL without query, e.g. https://edge1.example.com", cfg.PublicURL)
		}
		cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	}
	positiveOr(&cfg.HandshakeTimeout, DefaultHandshakeTimeout)
	if cfg.AllowOrigin == "" {
		cfg.AllowOrigin = "*"
	}
	positiveOr(&cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	positiveOr(&cfg.MaxHandshakes, DefaultMaxHandshakes)
	positiveOr(&cfg.MaxHandshakesPerClient, DefaultMaxHandshakesPerClient)
	cfg.MaxHandshakesPerClient = min(cfg.MaxHandshakesPerClient, cfg.MaxHandshakes)
	positiveOr(&cfg.ICEStartTimeout, DefaultICEStartTimeout)
	cfg.ICEStartTimeout = min(cfg.ICEStartTimeout, cfg.HandshakeTimeout)
	positiveOr(&cfg.OfferRate, admission.DefaultOfferRate)
	positiveOr(&cfg.OfferBurst, admission.DefaultOfferBurst)
	positiveOr(&cfg.MaxPendingOffers, DefaultMaxPendingOffers)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:          cfg,
		log:          log,
		ready:        make(chan struct{}),
		handshakes:   admission.NewSlots(cfg.MaxHandshakes, cfg.MaxHandshakesPerClient),
		pending:      admission.NewSlots(cfg.MaxPendingOffers, cfg.MaxPendingOffers),
		unproven:     admission.NewSlots(cfg.MaxPendingOffers+cfg.MaxHandshakes, cfg.MaxHandshakesPerClient),
		offers:       admission.NewOfferBuckets(cfg.OfferRate, cfg.OfferBurst, admission.DefaultOfferClients),
		sessions:     make(map[string]*session),
		ended:        newEndedSessions(endedWindow, endedMax),
		refusals:     newRefusalLog(log),
		silentClosed: namedRefusalLog(log, "viewer closed"),
	}
	s.resends.SetMaxBitrate(cfg.MaxResendBitrate)
	return s, nil
}

// LiveViewers is how many of client key's viewers (auth.Key of its
// address) are connected now: what its offer bucket has grown by.
func (s *Server) LiveViewers(key string) int { return s.offers.Live(key) }

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
	tick := time.NewTicker(refusalLogEvery)
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-tick.C:
			s.refusals.flush(false)
			s.silentClosed.flush(false)
			s.offers.Expire()
		case <-ctx.Done():
		}
	}
	s.refusals.flush(true)
	s.silentClosed.flush(true)

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

// RefusalLog is a refusal log like the server's own (one line per kind a
// second, msg its message), for the refusals of an extension.
func (s *Server) RefusalLog(msg string) func(r *http.Request, path string, status int, slug, detail string) {
	l := namedRefusalLog(s.log, msg)
	return func(r *http.Request, path string, status int, slug, detail string) {
		l.refused(r, path, status, slug, detail, "")
	}
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

// positiveOr sets a zero or negative limit to its default d.
func positiveOr[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}
