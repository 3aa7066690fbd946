package whep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/srtwhep/srtwhep/pkg/admission"
	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/events"
	"github.com/srtwhep/srtwhep/pkg/rtpsend"
	"github.com/srtwhep/srtwhep/pkg/turncred"
)

// Extension is a WHEP extension served beside the sessions
// (pkg/whepevents, pkg/wheplayer).
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
	// Limits bound what viewers may hold before they watch: offers per
	// client, answered offers waiting for ICE, handshakes (pkg/admission).
	Limits admission.ViewerLimits

	Source Source
	// SenderSource, when set, makes what each session's sender reads in
	// place of its reader (nil, or a nil answer: the reader itself): the
	// layer selection's switch between the path's renditions
	// (pkg/wheplayer). It is asked once, as the session is made, so what
	// it keeps per session is bounded by the sessions that exist; each
	// session's end is told to the Extensions.
	SenderSource func(Viewer) SenderSource
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
	// Latency, when set, observes the server's share of each live frame's
	// delay in every session's sender; Resends, when set, is the
	// server-wide budget their NACKs' resends draw on (nil: each viewer's
	// own bound only). The composition root owns both and reads them.
	Latency *rtpsend.Latency
	Resends *rtpsend.Resends
	// Problem, when set, says why a path's viewers would get no picture:
	// its last publisher was refused (asked only when the path has no
	// publisher), or its live one sends nothing a browser can decode. A
	// POST then gets 409 + Retry-After with the text, which names the
	// encoder's fix, instead of "no publisher" or a 201 and a black
	// screen.
	Problem func(path string) (StreamProblem, bool)
	// Extensions are served beside the sessions, under their URLs
	// (SessionURL; the server-sent events, pkg/whepevents; the layer
	// selection, pkg/wheplayer): every 201 carries each one's Link, in
	// this order, and each is told of every session's end.
	Extensions []Extension
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
)

// check refuses a Config the server cannot run with and fills in the
// defaults.
func (cfg Config) check() (Config, error) {
	if cfg.Source == nil {
		return cfg, errors.New("whep: Config.Source is nil; pass the hub adapter")
	}
	if cfg.Plane == nil {
		return cfg, errors.New("whep: Config.Plane is nil; pass the media plane (mediaplane.NewPlane)")
	}
	if cfg.PublicURL != "" {
		u, err := url.Parse(cfg.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return cfg, fmt.Errorf("whep: public URL %q must be an absolute http(s) URL without query, e.g. https://edge1.example.com", cfg.PublicURL)
		}
		cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.AllowOrigin == "" {
		cfg.AllowOrigin = "*"
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	cfg.Limits = cfg.Limits.WithDefaults(cfg.HandshakeTimeout)
	return cfg, nil
}
