package whep

import (
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// clientFrom is an HTTP client whose connections come from local, so one
// test can be several clients on loopback.
func clientFrom(local string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}

func postFrom(t *testing.T, c *http.Client, url, sdp string) (int, string) {
	t.Helper()
	resp, err := c.Post(url, "application/sdp", strings.NewReader(sdp))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After: %q", b)
	}
	return resp.StatusCode, string(b)
}

// One client's pending offers are capped; another client still gets in.
func TestHandshakesPerClient(t *testing.T) {
	src := newTestSource()
	src.publish("live/cam1")
	srv, hs := startServer(t, src, func(c *Config) {
		c.Limits.MaxHandshakes = 8
		c.Limits.MaxHandshakesPerClient = 2
	})
	url := hs.URL + "/live/cam1/whep"
	a, b := clientFrom("127.0.0.1"), clientFrom("127.0.0.2")
	for i := range 2 {
		if code, body := postFrom(t, a, url, testkit.Offer(t, testkit.OfferOptions{}).SDP); code != http.StatusCreated {
			t.Fatalf("offer %d from a: %d %q", i, code, body)
		}
	}
	code, body := postFrom(t, a, url, testkit.Offer(t, testkit.OfferOptions{}).SDP)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "from your address waiting for ICE to start or for their handshake (limit 2)") {
		t.Fatalf("third offer from a: %d %q", code, body)
	}
	othersGetIn(t, srv, b, url, "pending_limit")
}

// An offer whose viewer never starts ICE gives its slot back after the ICE
// start timeout, long before the handshake timeout, and is closed; a
// viewer that does start ICE is not hurried by it.
func TestICENotStartedFreesSlot(t *testing.T) {
	src := newTestSource()
	p := src.publish("live/cam1")
	srv, hs := startServer(t, src, func(c *Config) {
		c.Limits.MaxHandshakes = 1
		c.HandshakeTimeout = 30 * time.Second
		c.Limits.ICEStartTimeout = 300 * time.Millisecond
	})
	url := hs.URL + "/live/cam1/whep"
	c := clientFrom("127.0.0.1")
	if code, body := postFrom(t, c, url, testkit.Offer(t, testkit.OfferOptions{}).SDP); code != http.StatusCreated {
		t.Fatalf("silent offer: %d %q", code, body)
	}
	start := time.Now()
	testkit.WaitFor(t, 5*time.Second, "the silent offer's slot to come back", func() bool {
		st := srv.Stats()
		return st.PendingOffers == 0 && st.HandshakesInFlight == 0 && st.Sessions == 0 && p.readerCount() == 0
	})
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("slot came back after %v, want about the ICE start timeout", d)
	}
	if got := srv.Stats().HandshakeFailures; got != 1 {
		t.Errorf("HandshakeFailures %d, want 1", got)
	}

	// A real viewer: ICE starts at once, so the short ICE start timeout
	// never ends it.
	connected := applyAnswer(t, c, url)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	select {
	case <-connected:
	case <-ctx.Done():
		t.Fatal("viewer did not connect")
	}
	// Once its reader is attached the session is past awaitConnected,
	// where alone the ICE start timeout applies: the viewer stays.
	testkit.WaitFor(t, 10*time.Second, "the connected viewer's reader to attach", func() bool { return p.attachedCount() == 1 })
	if st := srv.Stats(); st.Sessions != 1 || st.HandshakeFailures != 1 {
		t.Fatalf("connected viewer: %d sessions, %d failures", st.Sessions, st.HandshakeFailures)
	}
}

// A client's handshakes in flight count against its cap with its pending
// offers: with two viewers whose ICE started (and whose DTLS never comes)
// a third POST from the address is refused 503 at once, instead of being
// answered and closed when its ICE starts with the address's handshake
// slots taken; another address still gets in.
func TestHandshakesCountAgainstClientOffers(t *testing.T) {
	src := newTestSource()
	src.publish("live/cam1")
	srv, hs := startServer(t, src, func(c *Config) {
		c.Limits.MaxHandshakes = 8
		c.Limits.MaxHandshakesPerClient = 2
		c.HandshakeTimeout = 30 * time.Second
	})
	url := hs.URL + "/live/cam1/whep"
	a := clientFrom("127.0.0.2")
	for i := range 2 {
		off := testkit.Offer(t, testkit.OfferOptions{})
		code, answer := postFrom(t, a, url, off.SDP)
		if code != http.StatusCreated {
			t.Fatalf("offer %d: %d %q", i+1, code, answer)
		}
		// ICE starts with a check of our own; no DTLS ever follows.
		startICE(t, off.SDP, answer)
	}
	testkit.WaitFor(t, 10*time.Second, "both viewers' ICE to start", func() bool {
		st := srv.Stats()
		return st.HandshakesInFlight == 2 && st.PendingOffers == 0
	})
	code, body := postFrom(t, a, url, testkit.Offer(t, testkit.OfferOptions{}).SDP)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "from your address waiting for ICE to start or for their handshake (limit 2)") {
		t.Fatalf("a third offer with two handshakes in flight: %d %q, want 503", code, body)
	}
	othersGetIn(t, srv, clientFrom("127.0.0.3"), url, "pending_limit")
	if got := srv.Stats().Rejected["handshake_limit"]; got != 0 {
		t.Errorf("%d viewers closed at ICE start for want of a handshake slot", got)
	}
}

// udpHostRE finds a UDP host candidate in an answer.
var udpHostRE = regexp.MustCompile(`a=candidate:\S+ 1 udp \d+ (\S+) (\d+) typ host`)

// startICE sends the server the ICE check the viewer that made offer
// would send, to the answer's UDP candidate, until the server answers.
func startICE(t *testing.T, offer, answer string) {
	t.Helper()
	m := udpHostRE.FindStringSubmatch(answer)
	if m == nil {
		t.Fatalf("no UDP host candidate in the answer:\n%s", answer)
	}
	conn, err := net.Dial("udp4", net.JoinHostPort(m[1], m[2]))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	check := testkit.NewICECheck(t, offer, answer)
	check.Controlling = true
	buf := make([]byte, 1500)
	testkit.WaitFor(t, 10*time.Second, "the server to answer an ICE check", func() bool {
		if _, err := conn.Write(check.Build(t).Raw); err != nil {
			return false
		}
		_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, err := conn.Read(buf)
		return err == nil
	})
}
