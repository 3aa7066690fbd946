package whep

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the TURN REST scheme's MAC
	"encoding/base64"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/turncred"
)

var turnLinkRE = regexp.MustCompile(`^<turn:turn\.example\.net\?transport=udp>; rel="ice-server"; username="(\d+):([0-9a-f]{16})"; credential="([^"]+)"; credential-type="password"$`)

const turnSecret = "north-wind-shared-secret"

func turnServers() []turncred.Server {
	return []turncred.Server{
		{URLs: []string{"stun:stun.example.net:3478"}},
		{URLs: []string{"turn:turn.example.net?transport=udp"}, AuthSecret: turnSecret, CredentialTTL: time.Hour},
	}
}

// checkMinted finds the minted TURN link among links and checks it
// against the RFC formula computed here, and its expiry against the TTL.
// It returns the username.
func checkMinted(t *testing.T, links []string, before, after time.Time) string {
	t.Helper()
	for _, l := range links {
		m := turnLinkRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		exp, _ := strconv.ParseInt(m[1], 10, 64)
		if lo, hi := before.Add(time.Hour).Unix(), after.Add(time.Hour).Unix()+1; exp < lo || exp > hi {
			t.Errorf("expiry %d outside [%d, %d]: not now + credentialTTL", exp, lo, hi)
		}
		mac := hmac.New(sha1.New, []byte(turnSecret))
		mac.Write([]byte(m[1] + ":" + m[2]))
		if want := base64.StdEncoding.EncodeToString(mac.Sum(nil)); m[3] != want {
			t.Errorf("credential %q, want base64(HMAC-SHA1(secret, %q)) = %q", m[3], m[1]+":"+m[2], want)
		}
		return m[1] + ":" + m[2]
	}
	t.Fatalf("no minted TURN Link in %q", links)
	return ""
}

// TestTURNCredentialsMinted: with an authSecret every 201 carries a TURN
// credential of its own, valid for credentialTTL.
func TestTURNCredentialsMinted(t *testing.T) {
	src := newTestSource()
	src.publish("live/cam1")
	_, hs := startServer(t, src, func(c *Config) { c.ICEServers = turnServers() })
	offer := testkit.Offer(t, testkit.OfferOptions{}).SDP
	users := map[string]bool{}
	for range 2 {
		before := time.Now()
		resp, body := post(t, hs.URL+"/live/cam1/whep", "application/sdp", offer)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("%d %q, want 201", resp.StatusCode, body)
		}
		links := resp.Header.Values("Link")
		if links[0] != `<stun:stun.example.net:3478>; rel="ice-server"` {
			t.Errorf("first Link %q, want the STUN server", links[0])
		}
		users[checkMinted(t, links, before, time.Now())] = true
	}
	if len(users) != 2 {
		t.Errorf("two answers shared one TURN username: %v", users)
	}
}

// TestOptionsCredentials: an OPTIONS lists credentialed ICE servers only
// to a client the POST would let watch, and never to a CORS preflight or
// on a session URL; STUN servers go to everyone.
func TestOptionsCredentials(t *testing.T) {
	const token = "a-viewer-token-0123456789"
	policy := auth.NewPolicy(auth.Rules{ForPath: func(p string) auth.PathRules {
		if p == "live/open" {
			return auth.PathRules{}
		}
		return auth.PathRules{ReadTokens: []string{token}}
	}}, auth.ThrottleConfig{Base: time.Millisecond, Max: time.Millisecond})
	t.Cleanup(policy.Close)
	_, hs := startServer(t, newTestSource(), func(c *Config) {
		c.Authorizer = policy
		c.ICEServers = append(turnServers(), turncred.Server{URLs: []string{"turns:static.example.net"}, Username: "u", Credential: "p"})
	})
	cases := []struct {
		name  string
		url   string
		hdr   map[string]string
		creds bool
	}{
		{"valid token", "/live/priv/whep", map[string]string{"Authorization": "Bearer " + token}, true},
		{"open path, no token", "/live/open/whep", nil, true},
		{"no token", "/live/priv/whep", nil, false},
		{"wrong token", "/live/priv/whep", map[string]string{"Authorization": "Bearer not-the-token-0123456789"}, false},
		{"preflight with the token", "/live/priv/whep", map[string]string{"Authorization": "Bearer " + token, "Access-Control-Request-Method": "POST", "Origin": "http://page.example"}, false},
		{"preflight on an open path", "/live/open/whep", map[string]string{"Access-Control-Request-Method": "POST", "Origin": "http://page.example"}, false},
		{"session URL", "/live/open/whep/0123456789abcdef0123456789abcdef", nil, false},
	}
	for _, tc := range cases {
		before := time.Now()
		resp, _ := do(t, http.MethodOptions, hs.URL+tc.url, "", "", tc.hdr)
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("%s: %d, want 204", tc.name, resp.StatusCode)
		}
		links := resp.Header.Values("Link")
		if links[0] != `<stun:stun.example.net:3478>; rel="ice-server"` {
			t.Errorf("%s: STUN server not listed first: %q", tc.name, links)
		}
		hasCreds := strings.Contains(strings.Join(links, "\n"), "credential=")
		if hasCreds != tc.creds {
			t.Errorf("%s: credentials listed = %v, want %v: %q", tc.name, hasCreds, tc.creds, links)
		}
		if tc.creds {
			checkMinted(t, links, before, time.Now())
			if want := `<turns:static.example.net>; rel="ice-server"; username="u"; credential="p"; credential-type="password"`; links[len(links)-1] != want {
				t.Errorf("%s: last Link %q, want %q", tc.name, links[len(links)-1], want)
			}
		}
	}
}
