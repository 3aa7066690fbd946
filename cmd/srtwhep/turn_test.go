package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/config"
)

// TestTURNCredentialsOnlyToViewers: with a TURN server configured by its
// shared secret, the player page (served to anyone) names no TURN server,
// a preflight or a tokenless OPTIONS gets only the STUN server, and the
// OPTIONS the page sends with its token gets a minted credential.
func TestTURNCredentialsOnlyToViewers(t *testing.T) {
	t.Parallel()
	const token = "a-viewer-token-0123456789"
	ts := startServer(t, func(c *config.Config) {
		c.PathDefaults.ReadTokens = []string{token}
		c.WebRTC.ICEServers = []config.ICEServer{
			{URLs: []string{"stun:stun.example.org:3478"}},
			{URLs: []string{"turn:turn.example.org:3478"}, AuthSecret: "north-wind-shared-secret"},
		}
	})
	resp, err := http.Get(ts.httpURL("/live/cam1?token=" + token))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Contains(string(page), "turn:") || strings.Contains(string(page), `<meta name="srtwhep-ice-servers"`) {
		t.Fatalf("player page %d carries ICE servers; with credentialed ones it must ask the endpoint", resp.StatusCode)
	}
	options := func(hdr map[string]string) []string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodOptions, ts.httpURL("/live/cam1/whep"), nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("OPTIONS %v: %d, want 204", hdr, resp.StatusCode)
		}
		return resp.Header.Values("Link")
	}
	for _, hdr := range []map[string]string{nil, {"Access-Control-Request-Method": "POST", "Origin": "http://page.example", "Authorization": "Bearer " + token}} {
		if l := options(hdr); len(l) != 1 || !strings.HasPrefix(l[0], "<stun:stun.example.org:3478>") {
			t.Errorf("OPTIONS %v: Links %q, want the STUN server alone", hdr, l)
		}
	}
	l := options(map[string]string{"Authorization": "Bearer " + token})
	if len(l) != 2 || !strings.HasPrefix(l[1], `<turn:turn.example.org:3478>; rel="ice-server"; username="`) || !strings.Contains(l[1], `credential-type="password"`) {
		t.Errorf("OPTIONS with the token: Links %q, want STUN and a minted TURN credential", l)
	}
	if w := ts.logs.Lines("static TURN credentials"); len(w) != 0 {
		t.Errorf("warned about static credentials with only a secret configured: %q", w)
	}
}
