package whep

import (
	"net/http"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

func TestDeleteAndKick(t *testing.T) {
	src := newTestSource()
	p := src.publish("live/cam1")
	srv, hs := startServer(t, src, nil)
	offer := func() string {
		resp, _ := postOffer(t, hs.URL+"/live/cam1/whep")
		return resp.Header.Get("Location")
	}
	loc := offer()
	if got := len(srv.Sessions()); got != 1 {
		t.Fatalf("Sessions() has %d entries, want 1", got)
	}
	resp, _ := do(t, http.MethodDelete, hs.URL+"/live/other/whep/"+loc[len(loc)-32:], "", "", nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("DELETE on another path's URL: %d, want 404", resp.StatusCode)
	}
	resp, _ = do(t, http.MethodDelete, hs.URL+loc, "", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	checkCORS(t, resp)
	// Teardown is idempotent: the session is gone, as the client wants.
	resp, body := do(t, http.MethodDelete, hs.URL+loc, "", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("second DELETE: %d %q, want 200", resp.StatusCode, body)
	}
	testkit.WaitFor(t, 10*time.Second, "the deleted session to release its reader", func() bool { return p.readerCount() == 0 })
	// Still 200 once the session's goroutine has ended it, but only on its
	// own path, and an id never handed out is 404.
	if resp, body := do(t, http.MethodDelete, hs.URL+loc, "", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("DELETE after the end: %d %q, want 200", resp.StatusCode, body)
	}
	resp, body = do(t, http.MethodDelete, hs.URL+"/live/other/whep/"+loc[len(loc)-32:], "", "", nil)
	checkProblem(t, resp, body, http.StatusNotFound, probNoSession, "no such WHEP session")
	resp, body = do(t, http.MethodDelete, hs.URL+"/live/cam1/whep/0123456789abcdef0123456789abcdef", "", "", nil)
	checkProblem(t, resp, body, http.StatusNotFound, probNoSession, "no such WHEP session")

	loc = offer()
	id := loc[len(loc)-32:]
	if !srv.KickSession(id) {
		t.Fatal("Kick returned false for a live session")
	}
	if srv.KickSession(id) {
		t.Error("Kick returned true twice")
	}
	testkit.WaitFor(t, 10*time.Second, "the kicked session to end", func() bool { return len(srv.Sessions()) == 0 && p.readerCount() == 0 })
}

func TestPatch(t *testing.T) {
	src := newTestSource()
	src.publish("live/cam1")
	_, hs := startServer(t, src, nil)
	resp, _ := postOffer(t, hs.URL+"/live/cam1/whep")
	url := hs.URL + resp.Header.Get("Location")
	etag := resp.Header.Get("ETag")
	const frag = "application/trickle-ice-sdpfrag"
	cand := "a=candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host\r\n"
	restart := "a=ice-ufrag:newufrag\r\na=ice-pwd:newpasswordnewpasswordxx\r\nm=video 9 UDP/TLS/RTP/SAVPF 0\r\na=mid:0\r\n" + cand

	cases := []struct {
		name, url, ctype, body string
		ifMatch                string
		code                   int
		want                   string
	}{
		{"unknown session", hs.URL + "/live/cam1/whep/0123456789abcdef0123456789abcdef", frag, cand, "", 404, "no such WHEP session"},
		{"wrong content type", url, "application/sdp", cand, "", 415, "Content-Type must be application/trickle-ice-sdpfrag"},
		{"garbage", url, frag, "hello world", "", 400, "malformed sdpfrag: line 1"},
		{"empty", url, frag, "\r\n", "", 400, "empty sdpfrag"},
		{"bad candidate", url, frag, "a=candidate:nonsense\r\n", "", 400, "candidate 1"},
		{"trickle", url, frag, cand, "", 204, ""},
		{"trickle with matching If-Match", url, frag, cand, etag, 204, ""},
		{"stale If-Match", url, frag, cand, `"stale"`, 412, "If-Match does not match"},
		{"restart without If-Match", url, frag, restart, "", 428, "an ICE restart needs If-Match"},
		{"restart with stale If-Match", url, frag, restart, `"stale"`, 412, "If-Match does not match"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hdr := map[string]string{}
			if c.ifMatch != "" {
				hdr["If-Match"] = c.ifMatch
			}
			resp, body := do(t, http.MethodPatch, c.url, c.ctype, c.body, hdr)
			if c.code >= 400 {
				checkProblem(t, resp, body, c.code, "", c.want)
				hdr["Accept"] = "text/plain"
				resp, body := do(t, http.MethodPatch, c.url, c.ctype, c.body, hdr)
				checkTextError(t, resp, body, c.code, c.want)
			} else if resp.StatusCode != c.code {
				t.Fatalf("got %d %q, want %d", resp.StatusCode, body, c.code)
			}
			checkCORS(t, resp)
		})
	}
}
