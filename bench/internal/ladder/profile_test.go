package ladder

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"strings"
	"testing"
	"time"
)

func TestProfileURL(t *testing.T) {
	got, err := ProfileURL("http://127.0.0.1:9998/metrics", 10*time.Second)
	if err != nil || got != "http://127.0.0.1:9998/debug/pprof/profile?seconds=10" {
		t.Errorf("ProfileURL = %q, %v", got, err)
	}
	if _, err := ProfileURL("127.0.0.1:9998", time.Second); err == nil {
		t.Error("a URL without a scheme and host was accepted")
	}
}

// TestProfileStep takes a real CPU profile from Go's pprof handler, as
// srtwhep serves it next to /metrics, of a process kept busy, and renders
// its top with go tool pprof.
func TestProfileStep(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		x := 0
		for ctx.Err() == nil {
			for i := range 100000 {
				x += i * i
			}
		}
		_ = x
	}()
	defer func() { cancel(); <-done }()

	dir := t.TempDir()
	top, file, err := profileStep(context.Background(), srv.URL+"/metrics", 400, time.Second, dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(file); err != nil || fi.Size() == 0 || !strings.HasSuffix(file, "cpu-N400.pprof") {
		t.Errorf("raw profile %q: %v", file, err)
	}
	lines := strings.Split(top, "\n")
	if !strings.Contains(top, "flat%") || !strings.Contains(top, "TestProfileStep") {
		t.Errorf("top does not look like go tool pprof -top of this test:\n%s", top)
	}
	if rows := len(lines) - 1 - strings.Count(top[:strings.Index(top, "flat%")], "\n"); rows > profileTopNodes {
		t.Errorf("%d functions in the top, want at most %d:\n%s", rows, profileTopNodes, top)
	}

	// Without pprof on the server: a 404 that says what to turn on.
	bare := httptest.NewServer(http.NotFoundHandler())
	defer bare.Close()
	if _, _, err := profileStep(context.Background(), bare.URL+"/metrics", 400, time.Second, ""); err == nil ||
		!strings.Contains(err.Error(), "metrics.pprof") {
		t.Errorf("profile from a server without pprof: %v", err)
	}
}
