package web

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestHealthz(t *testing.T) {
	s := start(t, Config{})
	if resp := get(t, dialFrom(t, s, ""), "/healthz", ""); resp.StatusCode != 200 || bodyOf(resp) != "ok\n" {
		t.Fatalf("healthz: %d", resp.StatusCode)
	}
}

func TestIdleConnectionClosed(t *testing.T) {
	s := start(t, Config{IdleTimeout: 300 * time.Millisecond})
	c := dialFrom(t, s, "")
	if resp := get(t, c, "/healthz", ""); resp.StatusCode != 200 {
		t.Fatalf("healthz: %d", resp.StatusCode)
	}
	waitClosed(t, c, "a silent connection after one request")
	if n := s.limit.openConns(); n != 0 {
		t.Errorf("%d connections still counted after the close", n)
	}
}

func TestHeaderTooLarge(t *testing.T) {
	s := start(t, Config{})
	c := dialFrom(t, s, "")
	big := "X-Big: " + strings.Repeat("a", 2*DefaultMaxHeaderBytes) + "\r\n"
	if resp := get(t, c, "/healthz", big); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("a %d KiB header: %d, want 431", len(big)>>10, resp.StatusCode)
	}
	if resp := get(t, dialFrom(t, s, ""), "/healthz", "X-Small: "+strings.Repeat("a", 8<<10)+"\r\n"); resp.StatusCode != 200 {
		t.Fatalf("an 8 KiB header: %d", resp.StatusCode)
	}
}
