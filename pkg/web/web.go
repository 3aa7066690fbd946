// Package web runs srtwhep's HTTP listener, which WHEP, the control API,
// the player page and the health endpoints share: it routes between them
// and owns the listener's limits and its graceful shutdown. It knows none
// of those components beyond their http.Handlers.
package web

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Config configures the listener. Listen is required; a nil handler's
// routes answer 404; zero limits take the defaults below.
type Config struct {
	Listen string // e.g. ":8889" or "127.0.0.1:0"
	// Key is the config key of Listen, for the error when it cannot be
	// bound; "" = http.listen.
	Key string
	// WHEP serves the WHEP URLs and passes every other request to the
	// handler it is given.
	WHEP func(next http.Handler) http.Handler
	// API is mounted under APIPrefix (before the player, which takes every
	// other GET).
	API       http.Handler
	APIPrefix string
	Player    http.Handler
	// Ready returns what GET /readyz answers as JSON, or nil while the
	// server's listeners are not all bound (503).
	Ready func() any

	// IdleTimeout closes a kept-alive connection that sends no new
	// request for this long.
	IdleTimeout time.Duration
	// BodyTimeout bounds reading a request body, counted from the end of
	// its headers and again from the handler's first read; a slower or
	// unterminated body is cut.
	BodyTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers; larger ones get 431.
	MaxHeaderBytes int
	// MaxConns caps open connections in total, MaxConnsPerClient per client
	// address (per /64 for IPv6); connections over a cap are closed at once.
	MaxConns, MaxConnsPerClient int
	// ExtraConnsPerClient, when set, raises a client address's cap above
	// MaxConnsPerClient by what it returns for its key (auth.Key): a crowd
	// behind one address holds a connection per viewer (the player's
	// event stream) once its viewers play.
	ExtraConnsPerClient func(key string) int
	// TrustedProxies are the addresses and networks (CIDR) whose
	// X-Forwarded-For or Forwarded headers name the client. They count
	// only against MaxConns, since they carry many clients' requests.
	TrustedProxies []string
	// TLS, when set, serves HTTPS instead of HTTP.
	TLS TLS

	Logger *slog.Logger
}

// The defaults of the limits. Headers are bounded well below net/http's
// 1 MiB: a WHEP request's headers are a few hundred bytes, a browser's
// with cookies a few KiB.
const (
	DefaultIdleTimeout       = 15 * time.Second
	DefaultBodyTimeout       = 5 * time.Second
	DefaultMaxHeaderBytes    = 16 << 10
	DefaultMaxConns          = 4096
	DefaultMaxConnsPerClient = 128
)

// shutdownGrace bounds how long open requests may finish after Serve's
// context ends; the whole process shutdown must stay well under 5 s.
const shutdownGrace = 2 * time.Second

// headerTimeout bounds the request line and headers (classic slowloris);
// with TLS it also bounds the handshake.
const headerTimeout = 10 * time.Second

// Server is the bound listener.
type Server struct {
	ln    net.Listener
	limit *limitListener
	srv   *http.Server
}

// Listen binds cfg.Listen; nothing is served until Serve.
func Listen(cfg Config) (*Server, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg = withDefaults(cfg)
	trusted, err := parseProxies(cfg.TrustedProxies)
	if err != nil {
		return nil, err
	}
	var tlsCfg *tls.Config
	if cfg.TLS.enabled() {
		if tlsCfg, err = cfg.TLS.tlsConfig(log); err != nil {
			return nil, err
		}
	}
	raw, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		key := cmp.Or(cfg.Key, "http.listen")
		return nil, fmt.Errorf("%s %q: %w; free the port or change %s", key, cfg.Listen, err, key)
	}
	limit := newLimitListener(raw, cfg.MaxConnsPerClient, cfg.MaxConns, trusted.trusted, log)
	limit.table.Extra = cfg.ExtraConnsPerClient
	var ln net.Listener = limit
	if tlsCfg != nil {
		ln = tls.NewListener(limit, tlsCfg)
	}
	return &Server{ln: ln, limit: limit, srv: &http.Server{
		Handler:           trusted.withClient(bodyDeadline(cfg.BodyTimeout, routes(cfg))),
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		// Set so that net/http sees no "h2" in it and stays on HTTP/1.1.
		TLSConfig: tlsCfg,
		ErrorLog:  slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}}, nil
}

func withDefaults(cfg Config) Config {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.MaxHeaderBytes <= 0 {
		cfg.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxConnsPerClient <= 0 {
		cfg.MaxConnsPerClient = DefaultMaxConnsPerClient
	}
	return cfg
}

func routes(cfg Config) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		var v any
		if cfg.Ready != nil {
			v = cfg.Ready()
		}
		if v == nil {
			http.Error(w, "listeners not bound yet", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
	})
	if cfg.API != nil && cfg.APIPrefix != "" {
		mux.Handle(cfg.APIPrefix, cfg.API)
	}
	if cfg.Player != nil {
		mux.Handle("/", cfg.Player)
	}
	if cfg.WHEP != nil {
		return cfg.WHEP(mux)
	}
	return mux
}

// bodyDeadline gives a request body d to arrive: counted from the end of
// its headers, and again from the handler's first read of it, so that
// time the handler spends before reading (the auth hook, a failure
// penalty) is not taken from the client. http.Server's ReadTimeout would
// also bound the body, but it keeps its deadline on the connection after
// the body, where it cancels the request context of any handler that runs
// longer (a WHEP offer waiting for ICE gathering); here the deadline is
// lifted as soon as the body has been read to its end.
func bodyDeadline(d time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		// Also bounds what net/http reads of a body the handler left
		// unread, to keep the connection.
		if err := rc.SetReadDeadline(time.Now().Add(d)); err != nil {
			next.ServeHTTP(w, r)
			return
		}
		r.Body = &deadlineBody{ReadCloser: r.Body, set: func(t time.Time) { _ = rc.SetReadDeadline(t) }, d: d}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody re-arms the read deadline at its first read and lifts it
// once the body has ended. After an error the deadline stays: the
// connection is broken and must not linger.
type deadlineBody struct {
	io.ReadCloser
	set           func(time.Time)
	d             time.Duration
	armed, lifted bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	if !b.armed {
		b.armed = true
		b.set(time.Now().Add(b.d))
	}
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.lifted {
		b.lifted = true
		b.set(time.Time{})
	}
	return n, err
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close releases a listener that will not be served (a later listener of
// the server failed to bind).
func (s *Server) Close() error { return s.ln.Close() }

// Serve answers requests until ctx ends, then lets open requests finish
// for up to shutdownGrace and closes the rest. It returns nil after a
// clean shutdown.
func (s *Server) Serve(ctx context.Context) error {
	served := make(chan error, 1)
	go func() { served <- s.srv.Serve(s.ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		s.srv.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http: %w", err)
	}
	return nil
}
