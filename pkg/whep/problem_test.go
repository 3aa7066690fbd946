package whep

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/httpproblem"
	"github.com/srtwhep/srtwhep/pkg/recent"
)

// checkProblem checks an RFC 9457 answer: its content type, and a body
// whose status is the response's, whose type is under httpproblem.TypeBase
// (with slug, unless ""), with a title and a one-line detail containing
// want.
func checkProblem(t *testing.T, resp *http.Response, body string, code int, slug, want string) {
	t.Helper()
	if resp.StatusCode != code {
		t.Fatalf("got %d %q, want %d", resp.StatusCode, body, code)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	var p httpproblem.Problem
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("body %q is not a problem: %v", body, err)
	}
	if p.Status != code || p.Title == "" || !strings.HasPrefix(p.Type, httpproblem.TypeBase) ||
		(slug != "" && p.Type != httpproblem.TypeBase+slug) || !strings.Contains(p.Detail, want) || strings.Contains(p.Detail, "\n") {
		t.Errorf("problem %+v, want status %d, type %s%s, detail containing %q", p, code, httpproblem.TypeBase, slug, want)
	}
}

// checkTextError checks the text/plain variant: the detail, one line.
func checkTextError(t *testing.T, resp *http.Response, body string, code int, want string) {
	t.Helper()
	if resp.StatusCode != code || !strings.Contains(body, want) {
		t.Fatalf("text/plain: got %d %q, want %d containing %q", resp.StatusCode, body, code, want)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want text/plain", ct)
	}
	if strings.Count(strings.TrimSpace(body), "\n") != 0 {
		t.Errorf("error body is not one line: %q", body)
	}
}

// TestDeletePastTheTable: an ended session pushed out of the table by
// later ones is 404 again, as is one past the window.
func TestDeletePastTheTable(t *testing.T) {
	srv, hs := startServer(t, newTestSource(), nil)
	now := time.Unix(1000, 0)
	srv.ended = recent.New(time.Minute, 2)
	srv.ended.Now = func() time.Time { return now }
	del := func(id string) int {
		resp, _ := do(t, http.MethodDelete, hs.URL+"/live/cam1/whep/"+id, "", "", nil)
		return resp.StatusCode
	}
	srv.ended.Add("one", "live/cam1")
	if code := del("one"); code != http.StatusOK {
		t.Errorf("DELETE of an ended session: %d, want 200", code)
	}
	srv.ended.Add("two", "live/cam1")
	srv.ended.Add("three", "live/cam1")
	if code := del("one"); code != http.StatusNotFound {
		t.Errorf("DELETE of a session pushed out of the table: %d, want 404", code)
	}
	if code := del("three"); code != http.StatusOK {
		t.Errorf("DELETE of the newest ended session: %d, want 200", code)
	}
	now = now.Add(endedWindow)
	if code := del("three"); code != http.StatusNotFound {
		t.Errorf("DELETE past the window: %d, want 404", code)
	}
}

func TestBadOfferSlug(t *testing.T) {
	firefox := "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 120 124\r\na=rtpmap:120 VP8/90000\r\na=rtpmap:124 rtx/90000\r\n"
	if got := badOfferSlug(firefox); got != probNoH264 {
		t.Errorf("VP8-only offer: %s, want %s", got, probNoH264)
	}
	withH264 := firefox + "m=video 9 UDP/TLS/RTP/SAVPF 126\r\na=rtpmap:126 H264/90000\r\n"
	if got := badOfferSlug(withH264); got != probBadOffer {
		t.Errorf("offer with H.264: %s, want %s", got, probBadOffer)
	}
	if got := badOfferSlug("v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n"); got != probBadOffer {
		t.Errorf("audio-only offer: %s, want %s (no video at all is another fault)", got, probBadOffer)
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRefusalsLogged: refused POSTs reach the log through the handler, a
// burst of one reason as one line, with the client's address and, for an
// offer that was read, its codecs; the metric counts every refusal.
func TestRefusalsLogged(t *testing.T) {
	var buf syncBuffer
	srv, hs := startServer(t, newTestSource(), func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
	})
	good := testkit.Offer(t, testkit.OfferOptions{}).SDP
	start := time.Now()
	for range 3 {
		if resp, body := post(t, hs.URL+"/live/none/whep", "application/sdp", good); resp.StatusCode != http.StatusConflict {
			t.Fatalf("%d %q, want 409", resp.StatusCode, body)
		}
	}
	if resp, _ := post(t, hs.URL+"/live/none/whep", "application/sdp", ""); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("empty offer: %d, want 400", resp.StatusCode)
	}
	if took := time.Since(start); took > 900*time.Millisecond {
		t.Skipf("the POSTs took %v, past the log's one-second window", took)
	}
	var refused []map[string]any
	for _, s := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) == nil && m["msg"] == "offer refused" {
			refused = append(refused, m)
		}
	}
	// Within a second (the test's POSTs take milliseconds): one line each.
	if len(refused) != 2 || refused[0]["reason"] != probNoPublisher || refused[1]["reason"] != probEmptyOffer {
		t.Fatalf("refusal lines %v, want one no-publisher and one empty-offer", refused)
	}
	if m := refused[0]; !strings.HasPrefix(m["remote"].(string), "127.0.0.1:") || !strings.Contains(m["codecs"].(string), "video/H264") ||
		m["status"] != float64(409) || m["path"] != "live/none" {
		t.Errorf("no-publisher line %v", m)
	}
	if n := srv.Stats().Rejected["no_publisher"]; n != 3 {
		t.Errorf("no_publisher rejections counted %d, want 3", n)
	}
}
