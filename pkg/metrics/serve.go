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

// Listen binds the metrics listener (host:port, e.g. "127.0.0.1:9998" or
// "127.0.0.1:0"). Binding before serving lets the caller learn the port
// and report every listener ready at once.
func Listen(listen string) (net.Listener, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %q: %w; free the port or change metrics.listen", listen, err)
	}
	return ln, nil
}

// Serve serves GET /metrics and a small index page at / on ln until ctx is
// done, then closes ln. It returns nil after a clean shutdown and an error
// if the server fails.
func (m *Metrics) Serve(ctx context.Context, ln net.Listener, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
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
