package whep

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// cappedHub is a hub whose path live/cam1 (published) takes maxReaders.
func cappedHub(t *testing.T, maxReaders int) *hub.Hub {
	t.Helper()
	h := hub.New(hub.Config{MaxReaders: func(string) int { return maxReaders }})
	pub, err := h.Publish("live/cam1", "127.0.0.1:5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	return h
}

// awaitConnectedPC waits for a channel applyAnswer returned.
func awaitConnectedPC(t *testing.T, connected <-chan struct{}, who string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	select {
	case <-connected:
	case <-ctx.Done():
		t.Fatalf("%s did not connect", who)
	}
}

// Answered offers whose viewers never start ICE hold no reader slot: on
// a path with maxReaders 5 that 3 viewers play, silent offers from 16
// addresses (more than the free seats) leave the counts alone, and a 4th
// and 5th viewer still get in; the cap still holds for viewers who
// connect: the 6th POST is refused 503 path-full at once.
func TestPendingOffersHoldNoReaderSlot(t *testing.T) {
	const maxReaders, silent = 5, 16
	h := cappedHub(t, maxReaders)
	srv, hs := startServer(t, hubSource(h), func(c *Config) {
		c.Limits.ICEStartTimeout = 20 * time.Second // the silent offers stay pending throughout
		c.HandshakeTimeout = 30 * time.Second
	})
	url := hs.URL + "/live/cam1/whep"
	join := func(i int) {
		t.Helper()
		awaitConnectedPC(t, applyAnswer(t, clientFrom("127.0.0.2"), url), fmt.Sprintf("viewer %d", i+1))
		testkit.WaitFor(t, 10*time.Second, "the viewer to be counted", func() bool {
			return h.State("live/cam1").Readers == i+1
		})
	}
	for i := range 3 {
		join(i)
	}
	for i := range silent {
		ip := fmt.Sprintf("127.0.0.%d", 10+i)
		if code, body := postFrom(t, clientFrom(ip), url, testkit.Offer(t, testkit.OfferOptions{}).SDP); code != http.StatusCreated {
			t.Fatalf("silent offer from %s: %d %q", ip, code, body)
		}
	}
	if st := srv.Stats(); st.PendingOffers != silent {
		t.Fatalf("%d pending offers, want %d", st.PendingOffers, silent)
	}
	if n := h.State("live/cam1").Readers; n != 3 {
		t.Fatalf("%d readers counted with 3 viewers and %d silent offers, want 3", n, silent)
	}
	if ps := h.Paths(); len(ps) != 1 || ps[0].Readers != 3 || len(ps[0].Sessions) != 3 {
		t.Fatalf("Paths with 3 viewers and silent offers: %+v", ps)
	}
	for i := 3; i < maxReaders; i++ {
		join(i)
	}
	code, body := postFrom(t, clientFrom("127.0.0.3"), url, testkit.Offer(t, testkit.OfferOptions{}).SDP)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "path-full") {
		t.Fatalf("offer to a path full of viewers: %d %q, want 503 path-full", code, body)
	}
	if got := srv.Stats().Rejected["reader_cap"]; got != 1 {
		t.Errorf("reader_cap rejections %d, want 1", got)
	}
	if st := srv.Stats(); st.PendingOffers != silent {
		t.Errorf("%d pending offers after the viewers joined, want the %d silent ones", st.PendingOffers, silent)
	}
}

// An offer answered while its path had room, whose viewer starts ICE
// after real viewers filled the path, is closed then with the POST's
// refusal (path-full, counted as reader_cap); the
// viewer that filled the path keeps playing.
func TestPendingOfferFullAtICEStart(t *testing.T) {
	h := cappedHub(t, 1)
	srv, hs := startServer(t, hubSource(h), func(c *Config) {
		c.Limits.ICEStartTimeout = 20 * time.Second
		c.HandshakeTimeout = 30 * time.Second
	})
	url := hs.URL + "/live/cam1/whep"
	late := testkit.Offer(t, testkit.OfferOptions{})
	code, lateAnswer := postFrom(t, clientFrom("127.0.0.3"), url, late.SDP)
	if code != http.StatusCreated {
		t.Fatalf("late viewer's offer: %d %q", code, lateAnswer)
	}
	awaitConnectedPC(t, applyAnswer(t, clientFrom("127.0.0.2"), url), "the first viewer")
	testkit.WaitFor(t, 10*time.Second, "the first viewer to be counted", func() bool {
		return h.State("live/cam1").Readers == 1
	})

	connectWith(t, late, lateAnswer)
	testkit.WaitFor(t, 15*time.Second, "the late viewer to be refused", func() bool {
		st := srv.Stats()
		return st.Rejected["reader_cap"] == 1 && st.Sessions == 1 && st.PendingOffers == 0
	})
	if n := h.State("live/cam1").Readers; n != 1 {
		t.Errorf("%d readers after the refusal, want the first viewer alone", n)
	}
	if st := srv.Stats(); st.HandshakesInFlight != 0 {
		t.Errorf("%d handshakes in flight after the refusal, want 0", st.HandshakesInFlight)
	}
}

// TestPendingLimit: offers whose viewer never starts ICE are bounded in
// total; beyond the bound a POST gets 503 + Retry-After, and once the ICE
// start timeout has closed them their slots and readers come back.
func TestPendingLimit(t *testing.T) {
	src := newTestSource()
	p := src.publish("live/cam1")
	srv, hs := startServer(t, src, func(c *Config) {
		c.Limits.MaxPendingOffers = 1
		c.Limits.ICEStartTimeout = 300 * time.Millisecond
	})
	// The first offer's answer is never applied, so it stays pending.
	resp, body := postOffer(t, hs.URL+"/live/cam1/whep")
	if st := srv.Stats(); st.PendingOffers != 1 || st.HandshakesInFlight != 0 {
		t.Errorf("PendingOffers %d, HandshakesInFlight %d, want 1 and 0", st.PendingOffers, st.HandshakesInFlight)
	}
	resp, body = post(t, hs.URL+"/live/cam1/whep", "application/sdp", testkit.Offer(t, testkit.OfferOptions{}).SDP)
	if resp.Header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After")
	}
	checkProblem(t, resp, body, http.StatusServiceUnavailable, probHandshakes, "too many WebRTC offers waiting for ICE to start (limit 1)")
	if got := srv.Stats().Rejected["pending_limit"]; got != 1 {
		t.Errorf("pending_limit rejections %d, want 1", got)
	}
	// The silent session is closed, counts as a failed handshake and
	// gives its slot and its reader back.
	testkit.WaitFor(t, 10*time.Second, "the silent offer to be closed", func() bool {
		st := srv.Stats()
		return st.PendingOffers == 0 && st.Sessions == 0 && p.readerCount() == 0
	})
	if got := srv.Stats().HandshakeFailures; got != 1 {
		t.Errorf("HandshakeFailures %d, want 1", got)
	}
	resp, body = postOffer(t, hs.URL+"/live/cam1/whep")
}
