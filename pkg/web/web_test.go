package web

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/auth"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// closeBound is the "closed within N s" bound of the tests: generous
// against a loaded CI machine, far below the 60–75 s such connections
// were held before.
const closeBound = 5 * time.Second

// testHandlers answers like the real components where it matters here:
// POST /echo reads its body (as a WHEP offer is read) and every other path
// tells who the client is.
func testHandlers(cfg *Config) {
	cfg.WHEP = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/echo" {
				next.ServeHTTP(w, r)
				return
			}
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, "%d bytes", len(b))
		})
	}
	cfg.Player = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := auth.ClientOf(r)
		fmt.Fprintf(w, "remote=%s addr=%s forwarded=%v", r.RemoteAddr, c.Addr, c.Forwarded)
	})
}

// start serves cfg on a free loopback port until the test ends.
func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.WHEP == nil && cfg.Player == nil {
		testHandlers(&cfg)
	}
	s, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

// dialFrom connects to s from a loopback source address ("" for any).
func dialFrom(t *testing.T, s *Server, src string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: closeBound}
	if src != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	c, err := d.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes a raw request on c and reads one response.
func roundTrip(t *testing.T, c net.Conn, br *bufio.Reader, raw string) *http.Response {
	t.Helper()
	c.SetDeadline(time.Now().Add(closeBound))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatalf("write: %v", err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	return resp
}

func bodyOf(resp *http.Response) string {
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// waitClosed fails unless the server closes c within closeBound. Whatever
// the server still sends first (an error response) is skipped.
func waitClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(closeBound))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: still open after %v", what, closeBound)
	}
}

// closedOnArrival fails unless a new connection from src is closed by the
// server within closeBound. The reset may even beat the dial's own return.
func closedOnArrival(t *testing.T, s *Server, src, what string) {
	t.Helper()
	d := net.Dialer{Timeout: closeBound}
	if src != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	c, err := d.Dial("tcp", s.Addr().String())
	if err != nil {
		if errors.Is(err, syscall.ECONNRESET) {
			return
		}
		t.Fatalf("%s: %v", what, err)
	}
	defer c.Close()
	waitClosed(t, c, what)
}

func get(t *testing.T, c net.Conn, path, extra string) *http.Response {
	t.Helper()
	return roundTrip(t, c, bufio.NewReader(c), "GET "+path+" HTTP/1.1\r\nHost: localhost\r\n"+extra+"\r\n")
}

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

// trickle writes one byte of body a second until the connection breaks or
// stop is closed; the returned channel is closed when it has returned.
func trickle(c net.Conn, stop <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := c.Write([]byte("x")); err != nil {
				return
			}
		}
	}()
	return done
}

func TestSlowBodyIsCut(t *testing.T) {
	s := start(t, Config{BodyTimeout: time.Second})
	slow := dialFrom(t, s, "")
	if _, err := io.WriteString(slow, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := trickle(slow, stop)
	defer func() { close(stop); <-done }()

	// Others are answered meanwhile.
	if resp := get(t, dialFrom(t, s, ""), "/healthz", ""); resp.StatusCode != 200 {
		t.Fatalf("healthz during a slow body: %d", resp.StatusCode)
	}
	slow.SetReadDeadline(time.Now().Add(closeBound))
	if resp, err := http.ReadResponse(bufio.NewReader(slow), nil); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("slow body answered %d, want the handler's 400 for a failed read", resp.StatusCode)
		}
	} else if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("a body at 1 byte/s is still being read after %v", closeBound)
	}
	waitClosed(t, slow, "the slow body's connection")
}

func TestUnterminatedChunkedBody(t *testing.T) {
	s := start(t, Config{BodyTimeout: time.Second})
	c := dialFrom(t, s, "")
	if _, err := io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, c, "an unterminated chunked body")
}

// A handler that runs on after reading its body (a WHEP offer waiting for
// ICE gathering or the auth hook) keeps its context: the body deadline is
// gone once the body has ended.
func TestBodyDeadlineLiftedAfterBody(t *testing.T) {
	const bodyTimeout = 200 * time.Millisecond
	s := start(t, Config{BodyTimeout: bodyTimeout, WHEP: func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := io.ReadAll(r.Body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			t := time.NewTimer(5 * bodyTimeout)
			defer t.Stop()
			select {
			case <-t.C:
				io.WriteString(w, "done")
			case <-r.Context().Done():
				http.Error(w, "context ended", http.StatusServiceUnavailable)
			}
		})
	}})
	c := dialFrom(t, s, "")
	resp := roundTrip(t, c, bufio.NewReader(c), "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, bodyOf(resp))
	}
}

// Time the handler spends before it reads (the auth hook, a failure
// penalty) is not taken from the client's body time.
func TestBodyDeadlineCountsFromFirstRead(t *testing.T) {
	const bodyTimeout = 200 * time.Millisecond
	s := start(t, Config{BodyTimeout: bodyTimeout, WHEP: func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t := time.NewTimer(3 * bodyTimeout)
			defer t.Stop()
			<-t.C
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, "%d bytes", len(b))
		})
	}})
	c := dialFrom(t, s, "")
	// Larger than net/http's read buffer, so most of it is still in the
	// socket when the handler starts reading.
	const n = 60 << 10
	resp := roundTrip(t, c, bufio.NewReader(c), fmt.Sprintf("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", n, strings.Repeat("v", n)))
	if got := bodyOf(resp); resp.StatusCode != 200 || got != fmt.Sprintf("%d bytes", n) {
		t.Fatalf("%d %s", resp.StatusCode, got)
	}
}

// A handler that answers without reading the body (a refusal) leaves
// net/http to drain it; a trickling client is cut there too.
func TestUnreadSlowBodyIsCut(t *testing.T) {
	s := start(t, Config{BodyTimeout: time.Second})
	c := dialFrom(t, s, "")
	if _, err := io.WriteString(c, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := trickle(c, stop)
	defer func() { close(stop); <-done }()
	waitClosed(t, c, "a trickled body nobody reads")
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

func TestPerClientConnectionCap(t *testing.T) {
	if !canBind("127.0.0.2") {
		t.Skip("127.0.0.2 is not usable as a source address here")
	}
	const limit = 3
	s := start(t, Config{MaxConnsPerClient: limit})
	var held []net.Conn
	for range limit {
		c := dialFrom(t, s, "127.0.0.1")
		if resp := get(t, c, "/healthz", ""); resp.StatusCode != 200 {
			t.Fatalf("connection within the cap: %d", resp.StatusCode)
		}
		held = append(held, c) // kept alive and idle
	}
	for i := range 5 {
		closedOnArrival(t, s, "127.0.0.1", fmt.Sprintf("connection %d over the cap", limit+i+1))
	}
	if resp := get(t, dialFrom(t, s, "127.0.0.2"), "/healthz", ""); resp.StatusCode != 200 {
		t.Fatalf("another client while the first is at its cap: %d", resp.StatusCode)
	}
	// Closing one gives its slot back once the server has read the close
	// and closed its side: wait for the count to drop (countedConn releases
	// before it closes, so the count is the server's own view), then one
	// connection from the same client must get through.
	held[0].Close()
	testkit.WaitFor(t, closeBound, "the server to release the closed connection's slot",
		func() bool { return s.limit.clientOpen("127.0.0.1") == limit-1 })
	c, err := (&net.Dialer{Timeout: closeBound, LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}}).Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatalf("dial after the slot was freed: %v", err)
	}
	defer c.Close()
	resp, err := tryGet(c)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the freed slot is not reusable: %v %v", resp, err)
	}
}

// clientOpen is how many connections of the client at ip are counted.
func (l *limitListener) clientOpen(ip string) int {
	return l.table.ClientOpen(auth.Key(netip.MustParseAddr(ip)))
}

func tryGet(c net.Conn) (*http.Response, error) {
	c.SetDeadline(time.Now().Add(closeBound))
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	return resp, nil
}

func TestTotalConnectionCap(t *testing.T) {
	const limit = 4
	s := start(t, Config{MaxConns: limit})
	for range limit {
		if resp := get(t, dialFrom(t, s, ""), "/healthz", ""); resp.StatusCode != 200 {
			t.Fatalf("within the cap: %d", resp.StatusCode)
		}
	}
	closedOnArrival(t, s, "", "a connection over the total cap")
}

// A trusted proxy's requests count only against the total: it carries
// every viewer behind it.
func TestTrustedProxyExemptFromClientCap(t *testing.T) {
	s := start(t, Config{MaxConnsPerClient: 1, TrustedProxies: []string{"127.0.0.1"}})
	for range 3 {
		if resp := get(t, dialFrom(t, s, "127.0.0.1"), "/healthz", ""); resp.StatusCode != 200 {
			t.Fatalf("proxy connection: %d", resp.StatusCode)
		}
	}
}

func canBind(ip string) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

func TestMissingCertFile(t *testing.T) {
	_, err := Listen(Config{Listen: "127.0.0.1:0", TLS: TLS{CertFile: "/nonexistent.pem", KeyFile: "/nonexistent.key"}})
	if err == nil || !strings.Contains(err.Error(), "certFile") {
		t.Fatalf("err = %v", err)
	}
}
