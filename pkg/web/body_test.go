package web

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

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
