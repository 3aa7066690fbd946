package web

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

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

// dialerFrom dials from a loopback source address ("" for any).
func dialerFrom(src string) *net.Dialer {
	d := &net.Dialer{Timeout: closeBound}
	if src != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	return d
}

// dialFrom connects to s from a loopback source address ("" for any).
func dialFrom(t *testing.T, s *Server, src string) net.Conn {
	t.Helper()
	c, err := dialerFrom(src).Dial("tcp", s.Addr().String())
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
	c, err := dialerFrom(src).Dial("tcp", s.Addr().String())
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

func canBind(ip string) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}
