package web

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/auth"
)

// A flood of refused connections makes one log line per client per
// interval, and the table forgets a client once its connections close.
func TestLimitTableAndLog(t *testing.T) {
	var buf bytes.Buffer
	l := newLimitListener(nil, 2, 4, func(netip.Addr) bool { return false }, slog.New(slog.NewTextHandler(&buf, nil)))
	now := time.Unix(1000, 0)
	l.table.Now = func() time.Time { return now }
	a := netip.MustParseAddr("2001:db8:1:2::1")
	b := netip.MustParseAddr("2001:db8:1:2::ffff") // same /64
	ka := auth.Key(a)
	if !l.admit(ka, a) || !l.admit(auth.Key(b), b) {
		t.Fatal("within the cap")
	}
	for range 1000 {
		if l.admit(ka, a) {
			t.Fatal("over the per-client cap, same /64")
		}
	}
	if n := strings.Count(buf.String(), "too many HTTP connections"); n != 1 {
		t.Errorf("%d log lines for 1000 refusals in one interval, want 1:\n%s", n, buf.String())
	}
	now = now.Add(refusalLogEvery)
	l.admit(ka, a)
	if got := buf.String(); strings.Count(got, "too many HTTP connections") != 2 || !strings.Contains(got, "refused=1000") {
		t.Errorf("the next interval's line must carry the count:\n%s", got)
	}
	c := netip.MustParseAddr("198.51.100.1")
	for range 2 {
		if !l.admit(auth.Key(c), c) {
			t.Fatal("another client within the total")
		}
	}
	d := netip.MustParseAddr("198.51.100.2")
	if l.admit(auth.Key(d), d) {
		t.Fatal("over the total cap")
	}
	if !strings.Contains(buf.String(), "HTTP connection limit reached") {
		t.Errorf("no line for the total cap:\n%s", buf.String())
	}
	for range 2 {
		l.release(ka)
	}
	for range 2 {
		l.release(auth.Key(c))
	}
	if l.openConns() != 0 || l.table.Clients() != 0 {
		t.Errorf("after every close: %d open, %d clients remembered", l.openConns(), l.table.Clients())
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
