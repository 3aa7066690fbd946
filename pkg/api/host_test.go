package api

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/auth"
)

// TestHostCheck: localhost and IP addresses (any port) reach the API, a
// listed name too, and any other name, which is what a DNS-rebinding page
// sends, gets 421 before the policy is even asked.
func TestHostCheck(t *testing.T) {
	src := &table{}
	h := Handler(Config{Paths: src, Sessions: src, AllowedHosts: []string{"srtwhep.internal"},
		Authorizer: auth.NewPolicy(auth.Rules{}, auth.ThrottleConfig{})})
	for host, want := range map[string]int{
		"localhost:9997": 200, "LOCALHOST": 200, "127.0.0.1:1": 200, "[::1]:9997": 200, "[::1]": 200, "10.1.2.3:9997": 200,
		"srtwhep.internal:9997": 200, "srtwhep.internal.": 200,
		"rebind.attacker.example:9997": http.StatusMisdirectedRequest, "localhost.attacker.example": http.StatusMisdirectedRequest,
		"": http.StatusMisdirectedRequest, "srtwhep.internal.attacker.example": http.StatusMisdirectedRequest,
	} {
		r := httptest.NewRequest("GET", "/v1/paths", nil)
		r.RemoteAddr, r.Host = "127.0.0.1:4000", host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Host %q: %d %s, want %d", host, w.Code, w.Body, want)
		}
		if want != 200 && !strings.Contains(w.Body.String(), "api.allowedHosts") {
			t.Errorf("Host %q: %s, want the fix in the answer", host, w.Body)
		}
	}
}

// TestTokenLockout: past the throttle's LockAfter wrong tokens a client
// gets 429 with Retry-After, even with the right token, while another
// client is served; after the lock it is let in again.
func TestTokenLockout(t *testing.T) {
	src := &table{}
	const lockFor = 300 * time.Millisecond
	policy := auth.NewPolicy(auth.Rules{APIToken: "api-token-0123456789"},
		auth.ThrottleConfig{Base: time.Microsecond, Max: time.Microsecond, LockAfter: 3, LockFor: lockFor})
	h := Handler(Config{Paths: src, Sessions: src, Authorizer: policy})
	const guesser, other = "203.0.113.9:4000", "198.51.100.1:4000"
	for i := range 3 {
		if w := do(t, h, "GET", "/v1/paths", guesser, "wrong"); w.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i+1, w.Code)
		}
	}
	w := do(t, h, "GET", "/v1/paths", guesser, "api-token-0123456789")
	ra, err := strconv.Atoi(w.Header().Get("Retry-After"))
	if w.Code != http.StatusTooManyRequests || err != nil || ra < 1 || !strings.Contains(w.Body.String(), "too many wrong tokens") {
		t.Fatalf("after 3 wrong tokens: %d Retry-After %q %s, want 429 with Retry-After", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if w := do(t, h, "GET", "/v1/paths", other, "api-token-0123456789"); w.Code != 200 {
		t.Errorf("another client during the lock: %d, want 200", w.Code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for do(t, h, "GET", "/v1/paths", guesser, "api-token-0123456789").Code != 200 {
		if time.Now().After(deadline) {
			t.Fatalf("still locked out 10 s after a %v lock", lockFor)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
