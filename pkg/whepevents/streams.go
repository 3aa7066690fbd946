package whepevents

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/pkg/hub"
)

// DefaultMaxStreams bounds the open event streams of the server.
const DefaultMaxStreams = 1024

// Config of the event streams.
type Config struct {
	// State reads a path's publisher and viewer state (hub.Hub.State).
	State func(path string) hub.PathState
	// Session reports whether id is an open WHEP session on path
	// (whep.Server.HasSession): event streams belong to one.
	Session func(path, id string) bool
	// Layers, when set, is the data of session id's layers event (the
	// layer selection extension, wheplayer.Layers.EventData); false when
	// there is no such session. Without it layers is not sent.
	Layers func(path, id string) ([]byte, bool)
	// MaxStreams bounds the open event streams; default DefaultMaxStreams.
	MaxStreams int
	// PublicURL, as the WHEP server's: the streams' URLs are absolute
	// under it, since they live on the server that holds the session.
	PublicURL string
	// ReconnectURL, when set, is the entry point a draining server sends
	// its viewers to (reconnect events): a load balancer, or another
	// server. Unlike PublicURL it is not this server.
	ReconnectURL string
	// AllowOrigin is the Access-Control-Allow-Origin value; default "*".
	AllowOrigin string
	// Refused logs a refused request (nil: not logged); the composition
	// root passes the WHEP server's rate-limited refusal log.
	Refused func(r *http.Request, path string, status int, slug, detail string)
	Logger  *slog.Logger
}

// Streams is the server's registry of event streams, bounded in total
// and per session, and the watcher (Run) that feeds them.
type Streams struct {
	cfg Config
	log *slog.Logger

	mu        sync.Mutex
	closed    bool
	byID      map[string]*eventStream
	bySession map[string][]*eventStream
	paths     map[string]*pathEvents

	// sent counts events written to readers, by eventTypes index.
	sent [len(eventTypes)]atomic.Uint64
	// layersAt is when the watcher last read the sessions' layers.
	layersAt time.Time
}

// sends are the event types this server sends, in the Link's order.
func (e *Streams) sends() []string {
	if e.cfg.Layers != nil {
		return eventTypes[:]
	}
	return eventTypes[:len(eventTypes)-1]
}

// New checks cfg and fills in defaults. It starts nothing.
func New(cfg Config) (*Streams, error) {
	if cfg.State == nil || cfg.Session == nil {
		return nil, errors.New("whepevents: Config.State and Config.Session are required")
	}
	if cfg.ReconnectURL != "" {
		u, err := url.Parse(cfg.ReconnectURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("whep: reconnect URL %q must be an absolute http(s) URL without query, e.g. https://live.example.com", cfg.ReconnectURL)
		}
		cfg.ReconnectURL = strings.TrimRight(cfg.ReconnectURL, "/")
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = DefaultMaxStreams
	}
	if cfg.AllowOrigin == "" {
		cfg.AllowOrigin = "*"
	}
	if cfg.Refused == nil {
		cfg.Refused = func(*http.Request, string, int, string, string) {}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Streams{cfg: cfg, log: log, byID: make(map[string]*eventStream),
		bySession: make(map[string][]*eventStream), paths: make(map[string]*pathEvents)}, nil
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24
	return hex.EncodeToString(b[:])
}
