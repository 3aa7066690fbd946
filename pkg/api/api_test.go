package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/auth"
)

// table is a Source over fixed data; the real adapters are exercised by
// cmd/srtwhep's end-to-end tests.
type table struct {
	paths    []Path
	sessions []Session
	kicked   []string
}

func (s *table) APIPaths() []Path       { return s.paths }
func (s *table) APISessions() []Session { return s.sessions }
func (s *table) KickPublisher(p string) bool {
	s.kicked = append(s.kicked, "pub:"+p)
	return p == "live/cam1"
}
func (s *table) KickSession(id string) bool {
	s.kicked = append(s.kicked, "sess:"+id)
	return id == "abc"
}

func do(t *testing.T, h http.Handler, method, url, remote, token string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, url, nil)
	r.RemoteAddr = remote
	r.Host = "127.0.0.1:9997" // the API's own listener, called by address
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestAPI(t *testing.T) {
	src := &table{
		paths:    []Path{{Name: "live/cam1", Publisher: &Publisher{Remote: "10.0.0.1:5000"}, Codec: "H264", Width: 1280, Readers: 2}},
		sessions: []Session{{ID: "abc", Path: "live/cam1", State: "connected", Since: time.Unix(5, 0)}},
	}
	policy := auth.NewPolicy(auth.Rules{}, auth.ThrottleConfig{Base: time.Millisecond, Max: time.Millisecond})
	h := Handler(Config{Paths: src, Sessions: src, Authorizer: policy})
	const local, remote = "127.0.0.1:4000", "203.0.113.9:4000"

	w := do(t, h, "GET", "/v1/paths/live/cam1", local, "")
	var p Path
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &p) != nil || p.Name != "live/cam1" || p.Readers != 2 || p.Publisher.Remote != "10.0.0.1:5000" {
		t.Fatalf("GET path: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "GET", "/v1/paths/live/none", local, ""); w.Code != 404 || !strings.Contains(w.Body.String(), `"error"`) {
		t.Errorf("unknown path: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "GET", "/v1/sessions", remote, ""); w.Code != http.StatusForbidden {
		t.Errorf("no token, remote client: %d, want 403", w.Code)
	}
	// A proxy on this host (deploy/Caddyfile) forwards for anyone: without
	// a token its requests are refused, even when they claim loopback.
	fwd := httptest.NewRequest("DELETE", "/v1/publishers/live/cam1", nil)
	fwd.RemoteAddr, fwd.Host = local, "localhost:9997"
	fwd.Header.Set("X-Forwarded-For", "127.0.0.1")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, fwd)
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "reverse proxy") {
		t.Errorf("forwarded, no token: %d %s, want 403", w.Code, w.Body)
	}
	if w := do(t, h, "DELETE", "/v1/sessions/abc", local, ""); w.Code != 200 {
		t.Errorf("kick: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "DELETE", "/v1/sessions/zzz", local, ""); w.Code != 404 {
		t.Errorf("kick unknown: %d", w.Code)
	}
	if w := do(t, h, "DELETE", "/v1/publishers/live/cam1", local, ""); w.Code != 200 {
		t.Errorf("kick publisher: %d", w.Code)
	}

	policy.SetRules(auth.Rules{APIToken: "s3cret"})
	w = do(t, h, "GET", "/v1/sessions", local, "")
	if w.Code != 401 || w.Header().Get("WWW-Authenticate") != `Bearer realm="srtwhep"` {
		t.Errorf("no token: %d %q", w.Code, w.Header().Get("WWW-Authenticate"))
	}
	if w := do(t, h, "GET", "/v1/sessions", remote, "wrong"); w.Code != 401 || !strings.Contains(w.Header().Get("WWW-Authenticate"), "invalid_token") {
		t.Errorf("wrong token: %d", w.Code)
	}
	w = do(t, h, "GET", "/v1/sessions", remote, "s3cret")
	var sl struct{ Sessions []Session }
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &sl) != nil || len(sl.Sessions) != 1 || sl.Sessions[0].ID != "abc" {
		t.Errorf("with token: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "GET", "/v1/nothing", local, "s3cret"); w.Code != 404 {
		t.Errorf("unknown endpoint: %d", w.Code)
	}
	want := "sess:abc sess:zzz pub:live/cam1"
	if got := strings.Join(src.kicked, " "); got != want {
		t.Errorf("kicks = %q, want %q", got, want)
	}
}
