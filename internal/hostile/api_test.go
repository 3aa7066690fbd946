package hostile

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// forwarder is a same-host TCP forwarder (what nginx's plain proxy_pass
// without X-Forwarded-For, stunnel, HAProxy in TCP mode or ssh -L are to
// the server): every connection to it is spliced to target, so the
// server sees a loopback client with no forwarding header.
type forwarder struct {
	ln net.Listener
	wg sync.WaitGroup
}

func startForwarder(t *testing.T, target string) *forwarder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &forwarder{ln: ln}
	var mu sync.Mutex
	var open []net.Conn
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			open = append(open, c, up)
			mu.Unlock()
			f.wg.Add(2)
			go func() { defer f.wg.Done(); _, _ = io.Copy(up, c); _ = up.(*net.TCPConn).CloseWrite() }()
			go func() { defer f.wg.Done(); _, _ = io.Copy(c, up); _ = c.(*net.TCPConn).CloseWrite() }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		f.wg.Wait()
	})
	return f
}

// status is one request's answer code and body.
func status(t *testing.T, c *http.Client, method, url, host, token string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, resp.Header, string(b)
}

// TestAPIThroughForwarder: through a same-host TCP forwarder in front of
// the WHEP port, /v1 answers 404 (the API is not there to expose), while
// WHEP still works through it; on the API's own listener a foreign Host
// header, what a DNS-rebinding page sends, gets 421 and the API's data
// stays unread; the bystander notices nothing.
func TestAPIThroughForwarder(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "")
	b := startBystander(t, srv)
	fwd := startForwarder(t, srv.Addrs.HTTP)
	c := httpClientFrom(source(0))
	base := "http://" + fwd.ln.Addr().String()

	refused := 0
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/paths"}, {"GET", "/v1/sessions"}, {"DELETE", "/v1/publishers/" + bystanderPath}, {"DELETE", "/v1/sessions/x"},
	} {
		code, _, body := status(t, c, r.method, base+r.path, "", "")
		if code != http.StatusNotFound || !strings.Contains(body, "api.listen") {
			t.Errorf("%s %s through the forwarder: %d %s, want 404 naming api.listen", r.method, r.path, code, body)
		}
		refused++
	}
	if code, _, _ := status(t, c, "GET", base+"/healthz", "", ""); code != http.StatusOK {
		t.Errorf("GET /healthz through the forwarder: %d, want 200 (the forwarder works)", code)
	}

	if srv.Addrs.API == "" {
		t.Fatal("the ready file names no API address")
	}
	for _, host := range []string{"rebind.attacker.example", "rebind.attacker.example:9997", "localhost.attacker.example"} {
		code, _, body := status(t, c, "GET", srv.APIURL("/v1/sessions"), host, "")
		if code != http.StatusMisdirectedRequest || strings.Contains(body, "sessions\"") {
			t.Errorf("GET /v1/sessions with Host %s: %d %s, want 421 and no sessions", host, code, body)
		}
		refused++
	}
	local := httpClientFrom(net.IPv4(127, 0, 0, 1))
	code, _, body := status(t, local, "GET", srv.APIURL("/v1/sessions"), "localhost:9997", "")
	if code != http.StatusOK || !strings.Contains(body, bystanderPath) {
		t.Errorf("GET /v1/sessions as localhost: %d %s, want 200 listing the bystander", code, body)
	}
	t.Logf("control API: %d of %d requests through a same-host forwarder or with a foreign Host refused (404, 421)", refused, 7)
	b.waitWindow()
	b.Check(t)
}

// TestTokenFailures429: a client that keeps guessing a path's viewer
// token is refused with 429 and Retry-After after the throttle's few
// failures, even when it then sends the right token, while another
// address with the right token is let through; the bystander plays on.
func TestTokenFailures429(t *testing.T) {
	t.Parallel()
	const token = "viewer-token-0123456789"
	srv := startServer(t, "paths:\n  live/private:\n    readTokens: ["+token+"]\n")
	b := startBystander(t, srv)
	offer := testkit.Offer(t, testkit.OfferOptions{}).SDP
	post := func(ip net.IP, tok string) (int, http.Header) {
		req, err := http.NewRequest("POST", srv.URL("/live/private/whep"), strings.NewReader(offer))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/sdp")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := httpClientFrom(ip).Do(req)
		if err != nil {
			var ue interface{ Timeout() bool }
			if errors.As(err, &ue) && ue.Timeout() {
				t.Fatalf("POST from %v timed out", ip)
			}
			t.Fatalf("POST from %v: %v", ip, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	start := time.Now()
	wrong := 0
	for i := range 20 { // bounded: the lock must come within the first few
		code, h := post(source(0), "guess-"+strconv.Itoa(i)+"-0123456789")
		if code == http.StatusTooManyRequests {
			if ra, err := strconv.Atoi(h.Get("Retry-After")); err != nil || ra < 1 {
				t.Errorf("429 with Retry-After %q, want whole seconds", h.Get("Retry-After"))
			}
			break
		}
		if code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401 then 429", i+1, code)
		}
		wrong++
	}
	if wrong >= 20 {
		t.Fatalf("20 wrong tokens from %v and never a 429", source(0))
	}
	if code, _ := post(source(0), token); code != http.StatusTooManyRequests {
		t.Errorf("the right token from the locked-out address: %d, want 429 until the lock ends", code)
	}
	// Nobody publishes on live/private: 409 means the token was accepted.
	if code, _ := post(source(1), token); code != http.StatusConflict {
		t.Errorf("the right token from another address: %d, want 409 (let in; nothing published)", code)
	}
	t.Logf("viewer token guessing from %v: 429 after %d wrong tokens (%.1f s of penalties); another address unaffected",
		source(0), wrong, time.Since(start).Seconds())
	b.waitWindow()
	b.Check(t)
}
