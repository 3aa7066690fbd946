package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// shutdownTimeout bounds how long a scrape in progress may delay shutdown.
const shutdownTimeout = 5 * time.Second

const indexPage = `<!doctype html>
<html><head><title>srtwhep metrics</title></head>
<body><p>srtwhep metrics: <a href="/metrics">/metrics</a> (Prometheus text format)</p></body></html>
`

// Serve listens on listen (host:port, e.g. ":9998" or "127.0.0.1:0") and
// serves GET /metrics and a small index page at / until ctx is done. The
// bound address is sent on ready (if not nil) once the listener is open, so
// callers that bind port 0 learn the port. It returns nil after a clean
// shutdown and an error if it cannot listen or the server fails.
func (m *Metrics) Serve(ctx context.Context, listen string, log *slog.Logger, ready chan<- net.Addr) error {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", listen)
	if err != nil {
		return fmt.Errorf("metrics: listen on %q: %w; free the port or change metrics.listen", listen, err)
	}

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.handler(log))
	if m.profiling {
		// Profiles are for operators and benchmarks; the metrics port is
		// bound to localhost in the shipped compose file.
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, indexPage)
	})
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("metrics listening", "addr", ln.Addr().String())

	if ready != nil {
		select {
		case ready <- ln.Addr():
		case <-ctx.Done():
		case err := <-served:
			return fmt.Errorf("metrics: serve on %s: %w", ln.Addr(), err)
		}
	}

	select {
	case err := <-served:
		// Serve returns only on Shutdown/Close, which happen below, so any
		// return here is a real failure.
		return fmt.Errorf("metrics: serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}

	// ctx is already done; the shutdown deadline needs a fresh one.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	shutErr := srv.Shutdown(sctx)
	if shutErr != nil {
		// Scrapes that outlive the deadline are cut off.
		_ = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("metrics: serve on %s: %w", ln.Addr(), err)
	}
	if shutErr != nil {
		return fmt.Errorf("metrics: shutdown: %w", shutErr)
	}
	return nil
}
