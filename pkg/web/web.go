// Package web runs srtwhep's HTTP listener, which WHEP, the control API,
// the player page and the health endpoints share: it routes between them
// and owns the listener's limits and its graceful shutdown. It knows none
// of those components beyond their http.Handlers.
package web

import (
	"context"
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
// routes answer 404.
type Config struct {
	Listen string // e.g. ":8889" or "127.0.0.1:0"
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
	Ready  func() any
	Logger *slog.Logger
}

// shutdownGrace bounds how long open requests may finish after Serve's
// context ends; the whole process shutdown must stay well under 5 s.
const shutdownGrace = 2 * time.Second

// Server is the bound listener.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Listen binds cfg.Listen; nothing is served until Serve.
func Listen(cfg Config) (*Server, error) {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("http.listen %q: %w; free the port or change http.listen", cfg.Listen, err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
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
	var h http.Handler = mux
	if cfg.WHEP != nil {
		h = cfg.WHEP(mux)
	}
	return &Server{ln: ln, srv: &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}}, nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

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
