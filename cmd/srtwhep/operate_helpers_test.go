package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/config"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/whep"
)

// writeFile replaces file atomically, as editors and config management do,
// so the watcher never reads half a file.
func writeFile(t *testing.T, file, content string) {
	t.Helper()
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

// startServerFile runs the real server from a config file, as
// `srtwhep -config FILE` does, so reloads can be tested.
func startServerFile(t *testing.T, content string) (*testServer, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "srtwhep.yml")
	writeFile(t, file, content)
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	return runTestServer(t, cfg), file
}

// runTestServer runs the server on cfg until the test ends, logging into a
// buffer the test can search.
func runTestServer(t *testing.T, cfg *config.Config, whepOpts ...func(*whep.Config, *plane.Config)) *testServer {
	t.Helper()
	logs := &testkit.LogBuffer{}
	var w io.Writer = logs
	if testing.Verbose() {
		w = io.MultiWriter(logs, os.Stderr)
	}
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := newServer(cfg, log, whepOpts...)
	if err != nil {
		t.Fatalf("newServer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("server did not stop within 5 s of cancel")
		}
	})
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatalf("server stopped before ready: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("server not ready within 10 s")
	}
	return &testServer{server: s, logs: logs}
}

// request sends one HTTP request with an optional Bearer token and returns
// the status, headers and body.
func request(t *testing.T, method, url, token, contentType, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// apiJSON calls the control API and decodes a 200 answer into v.
func (ts *testServer) apiJSON(t *testing.T, method, path, token string, v any) int {
	t.Helper()
	code, _, body := request(t, method, ts.apiURL(path), token, "", "")
	if code == http.StatusOK && v != nil {
		if err := json.Unmarshal([]byte(body), v); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, body)
		}
	}
	return code
}

// postOffer sends a real pion offer to the path's WHEP endpoint.
func (ts *testServer) postOffer(t *testing.T, path, token string) (int, http.Header, string) {
	t.Helper()
	return request(t, http.MethodPost, ts.httpURL("/"+path+"/whep"), token, "application/sdp", offerSDP(t))
}

// dialViewerToken is dialViewer with a Bearer token; it counts packets
// only (no decoding), which is all the auth tests need.
func dialViewerToken(t *testing.T, ts *testServer, path, token string) *whepclient.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	sess, err := whepclient.Dial(ctx, ts.httpURL("/"+path+"/whep"), whepclient.Options{
		BearerToken:   token,
		SettingEngine: testkit.LoopbackOnly,
	})
	if err != nil {
		t.Fatalf("WHEP dial %s with token: %v", path, err)
	}
	t.Cleanup(func() { sess.Close() })
	if err := sess.WaitConnected(ctx); err != nil {
		t.Fatalf("viewer did not connect: %v", err)
	}
	return sess
}

// waitUnthrottled waits until failed attempts from loopback no longer delay
// or refuse the next one, so a test's next good attempt is judged on its
// credentials alone.
func (ts *testServer) waitUnthrottled(t *testing.T) {
	t.Helper()
	testkit.WaitFor(t, 3*time.Second, "failure penalty to expire", func() bool {
		return ts.policy.Penalty("127.0.0.1:1") == 0
	})
}
