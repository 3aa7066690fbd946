package whep

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// timeoutErr is how an edge says its source gave no picture in time.
type timeoutErr struct{ msg string }

func (e timeoutErr) Error() string { return e.msg }
func (e timeoutErr) Timeout() bool { return true }

// refusedErr is how an edge says its source refused the stream.
type refusedErr struct{ msg string }

func (e refusedErr) Error() string { return e.msg }
func (e refusedErr) Unwrap() error { return hub.ErrNoPublisher }

// TestDemand: the demand runs before the reader is added (the path gets
// its publisher inside it, as an edge's pull does), only for offers that
// are otherwise acceptable, and its refusals become 404, 504 and 502 with
// the source's reason.
func TestDemand(t *testing.T) {
	src := newTestSource()
	var mu sync.Mutex
	var asked []string
	demand := func(_ context.Context, path string) error {
		mu.Lock()
		asked = append(asked, path)
		mu.Unlock()
		switch path {
		case "live/cold":
			src.mu.Lock()
			published := src.paths[path] != nil
			src.mu.Unlock()
			if !published {
				src.publish(path)
			}
			return nil
		case "live/refused":
			return refusedErr{"origin srt://o:8890: no such stream (1404)"}
		case "live/slow":
			return timeoutErr{"origin srt://o:8890 sent no picture within 5s: no answer (connection timed out)"}
		case "live/broken":
			return errors.New("origin srt://o:8890: lookup o: no such host")
		}
		return nil
	}
	_, hs := startServer(t, src, func(c *Config) { c.Demand = demand })
	good := testkit.Offer(t, testkit.OfferOptions{}).SDP

	resp, body := post(t, hs.URL+"/live/cold/whep", "application/sdp", good)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("cold path: %d %q, want 201 (the demand published it before the reader was added)", resp.StatusCode, body)
	}
	for _, c := range []struct {
		path string
		code int
		want string
	}{
		{"live/refused", 404, `path "live/refused": origin srt://o:8890: no such stream (1404)`},
		{"live/slow", 504, `path "live/slow": origin srt://o:8890 sent no picture within 5s: no answer (connection timed out)`},
		{"live/broken", 502, `path "live/broken": origin srt://o:8890: lookup o: no such host`},
	} {
		// An edge's refusals keep their statuses (404 for a stream the
		// origin has not, not the 409 of a local path) and say the
		// origin's reason, in both formats.
		resp, body := post(t, hs.URL+"/"+c.path+"/whep", "application/sdp", good)
		checkProblem(t, resp, body, c.code, "", c.want)
		checkCORS(t, resp)
		resp, body = do(t, http.MethodPost, hs.URL+"/"+c.path+"/whep", "application/sdp", good, map[string]string{"Accept": "text/plain"})
		if resp.StatusCode != c.code || strings.TrimSpace(body) != c.want {
			t.Errorf("%s as text: %d %q, want %d %q", c.path, resp.StatusCode, body, c.code, c.want)
		}
	}
	resp, _ = post(t, hs.URL+"/live/other/whep", "text/plain", good)
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("bad content type: %d", resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"live/cold", "live/refused", "live/refused", "live/slow", "live/slow", "live/broken", "live/broken"}; strings.Join(asked, " ") != strings.Join(want, " ") {
		t.Errorf("demands %v, want %v (none for a refused offer)", asked, want)
	}
}

// TestPublicURL: with a public URL the Location is absolute under it (its
// path prefix kept, a trailing slash dropped), and PATCH and DELETE on the
// path part still find the session.
func TestPublicURL(t *testing.T) {
	src := newTestSource()
	src.publish("live/cam1")
	_, hs := startServer(t, src, func(c *Config) { c.PublicURL = "https://edge1.example.com/e1/" })
	resp, body := postOffer(t, hs.URL+"/live/cam1/whep")
	loc := resp.Header.Get("Location")
	re := regexp.MustCompile(`^https://edge1\.example\.com/e1/live/cam1/whep/[0-9a-f]{32}$`)
	if !re.MatchString(loc) {
		t.Fatalf("Location %q, want %s", loc, re)
	}
	// The proxy in front strips /e1: this server sees the rest.
	resp, body = do(t, http.MethodDelete, hs.URL+strings.TrimPrefix(loc, "https://edge1.example.com/e1"), "", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d %q", resp.StatusCode, body)
	}

	for _, bad := range []string{"edge1.example.com", "ftp://edge1.example.com", "https://e.example.com/?a=1", "https://"} {
		if _, err := New(Config{Source: src, Plane: loopbackPlane(t), PublicURL: bad}); err == nil ||
			!strings.Contains(err.Error(), "must be an absolute http(s) URL") {
			t.Errorf("public URL %q: %v, want a refusal", bad, err)
		}
	}
}
