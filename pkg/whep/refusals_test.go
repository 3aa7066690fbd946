package whep

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/auth"
)

// refusalLines are the refusal lines of a JSON log: "offer refused" and
// the flush's "offer refused: held back".
func refusalLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, s := range strings.Split(strings.TrimSpace(log), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) == nil && strings.HasPrefix(fmt.Sprint(m["msg"]), "offer refused") {
			out = append(out, m)
		}
	}
	return out
}

// TestAuthRefusalLogged: a viewer the access policy refuses is logged by
// the rate-limited refusal line only, and the refusals a burst held back
// are logged once its second is over (the server's own ticker), so every
// refusal is accounted for in the log.
func TestAuthRefusalLogged(t *testing.T) {
	var buf syncBuffer
	policy := auth.NewPolicy(auth.Rules{ForPath: func(string) auth.PathRules {
		return auth.PathRules{ReadTokens: []string{"a-viewer-token-0123456789"}}
	}}, auth.ThrottleConfig{Base: time.Millisecond, Max: time.Millisecond})
	t.Cleanup(policy.Close)
	_, hs := startServer(t, newTestSource(), func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
		c.Authorizer = policy
	})
	good := testkit.Offer(t, testkit.OfferOptions{}).SDP
	const posts = 4
	for range posts {
		if resp, body := post(t, hs.URL+"/live/priv/whep", "application/sdp", good); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%d %q, want 401", resp.StatusCode, body)
		}
	}
	accounted := func() int {
		n := 0
		for _, m := range refusalLines(t, buf.String()) {
			if m["reason"] == probUnauthorized {
				s, _ := m["suppressed"].(float64)
				n += int(s)
				if m["msg"] == "offer refused" {
					n++ // the refusal the line is about
				}
			}
		}
		return n
	}
	testkit.WaitFor(t, 20*time.Second, "every refusal in the log", func() bool { return accounted() >= posts })
	if n := accounted(); n != posts {
		t.Errorf("the log accounts for %d refusals, want %d:\n%s", n, posts, buf.String())
	}
	for _, s := range strings.Split(buf.String(), "\n") {
		if strings.Contains(s, "live/priv") && !strings.Contains(s, `"msg":"offer refused"`) {
			t.Errorf("a line about the refused viewer besides the refusal line: %s", s)
		}
	}
}

// TestHookRedirectLogged: a viewer the auth hook refused with a redirect
// gets a plain 401, and the refusal line says the hook redirected, which
// is what its operator must fix.
func TestHookRedirectLogged(t *testing.T) {
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			w.WriteHeader(http.StatusOK)
			return
		}
		http.Redirect(w, r, "/ok", http.StatusFound)
	}))
	t.Cleanup(hook.Close)
	var buf syncBuffer
	policy := auth.NewPolicy(auth.Rules{Hook: auth.HookConfig{URL: hook.URL + "/auth"}},
		auth.ThrottleConfig{Base: time.Millisecond, Max: time.Millisecond})
	t.Cleanup(policy.Close)
	src := newTestSource()
	src.publish("live/cam1")
	_, hs := startServer(t, src, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
		c.Authorizer = policy
	})
	resp, body := post(t, hs.URL+"/live/cam1/whep", "application/sdp", testkit.Offer(t, testkit.OfferOptions{}).SDP)
	if resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, "302") {
		t.Fatalf("%d %q, want 401 that does not show the hook's answer", resp.StatusCode, body)
	}
	testkit.WaitFor(t, 5*time.Second, "the refusal line", func() bool {
		for _, m := range refusalLines(t, buf.String()) {
			if d, _ := m["detail"].(string); strings.Contains(d, "auth hook answered 302; hooks must answer 2xx to allow, redirects are not followed") {
				return true
			}
		}
		return false
	})
}
