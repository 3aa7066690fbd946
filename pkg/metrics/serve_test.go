package metrics

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// startServe runs Serve on 127.0.0.1:0 and returns its base URL and a stop
// function that cancels it and returns Serve's result.
func startServe(t *testing.T, m *Metrics) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	addr := ln.Addr()
	done := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() { done <- m.Serve(ctx, ln, log) }()
	stop := func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return within 10s of cancel")
			return nil
		}
	}
	return "http://" + addr.String(), stop
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return resp, string(body)
}

func TestServeScrape(t *testing.T) {
	m := New(fixedSources())
	base, stop := startServe(t, m)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	resp, body := get(t, c, base+"/metrics")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: status %d, body %q", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("GET /metrics: Content-Type %q, want text/plain", ct)
	}
	for _, want := range []string{
		`srtwhep_path_readers{path="live/cam1"} 2`,
		`srtwhep_srt_rtt_seconds{path="live/cam1"} 0.012`,
		`srtwhep_webrtc_sessions{state="connected"} 2`,
		`srtwhep_build_info{goversion="go1.26.8",version="v0.1.0"} 1`,
		"\ngo_goroutines ",
		"\nprocess_cpu_seconds_total ",
		"\nprocess_resident_memory_bytes ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("GET /metrics: body lacks %q", want)
		}
	}

	resp, body = get(t, c, base+"/")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `href="/metrics"`) {
		t.Errorf("GET /: status %d, body %q; want 200 with a link to /metrics", resp.StatusCode, body)
	}
	resp, _ = get(t, c, base+"/nope")
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nope: status %d, want 404", resp.StatusCode)
	}
	req, err := http.NewRequest(http.MethodPost, base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST /metrics: %v", err)
	}
	pr.Body.Close()
	if pr.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: status %d, want 405", pr.StatusCode)
	}

	tr.CloseIdleConnections()
	if err := stop(); err != nil {
		t.Fatalf("Serve after cancel: %v, want nil", err)
	}
}

func TestServeAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := Listen(ln.Addr().String()); err == nil || !strings.Contains(err.Error(), "metrics.listen") {
		t.Fatalf("Listen on a busy port: %v, want an error that names metrics.listen", err)
	}
}

// Handler is what cmd mounts when metrics share a listener; it must serve
// the same registry.
func TestHandler(t *testing.T) {
	m := New(fixedSources())
	srv := &http.Server{Handler: m.Handler()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	tr := &http.Transport{}
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, body := get(t, c, "http://"+ln.Addr().String()+"/metrics")
	tr.CloseIdleConnections()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	<-served
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `srtwhep_path_publisher_up{path="live/cam2"} 0`) {
		t.Fatalf("Handler: status %d, body lacks live/cam2 publisher_up:\n%s", resp.StatusCode, body)
	}
}

// brokenCollector stands in for a collector that fails at scrape time.
type brokenCollector struct{ desc *prometheus.Desc }

func (b brokenCollector) Describe(ch chan<- *prometheus.Desc) { ch <- b.desc }
func (b brokenCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(b.desc, errors.New("source unavailable"))
}

// A failing collector must be logged to Sources.Log and must not blank the
// rest of the page.
func TestHandlerLogsScrapeErrors(t *testing.T) {
	var logBuf bytes.Buffer
	src := fixedSources()
	src.Log = slog.New(slog.NewTextHandler(&logBuf, nil))
	m := New(src)
	m.Registry().MustRegister(brokenCollector{prometheus.NewDesc("test_broken", "Always fails.", nil, nil)})

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `srtwhep_path_readers{path="live/cam1"} 2`) {
		t.Fatalf("status %d, want 200 with the srtwhep series despite one failing collector:\n%s", rec.Code, rec.Body.String())
	}
	// The error counter is bumped after the page is written, so the next
	// scrape shows it.
	rec = httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `promhttp_metric_handler_errors_total{cause="gathering"} 1`) {
		t.Errorf("the gathering error is not counted in promhttp_metric_handler_errors_total")
	}
	if !strings.Contains(logBuf.String(), "source unavailable") {
		t.Errorf("the scrape error was not logged; log:\n%s", logBuf.String())
	}
}
