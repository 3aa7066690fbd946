package whep

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/admission"
)

// Past its burst a client gets 429 with Retry-After and the offer-rate
// problem, before anything else is looked at; another address does not.
func TestOfferRate429(t *testing.T) {
	src := newTestSource()
	src.publish("live/cam1")
	srv, hs := startServer(t, src, func(c *Config) {
		c.Limits.OfferRate = 1
		c.Limits.OfferBurst = 2
	})
	url := hs.URL + "/live/cam1/whep"
	a, b := clientFrom("127.0.0.1"), clientFrom("127.0.0.2")
	// Even refused offers take a token: a flood of junk costs as much as
	// a flood of valid offers.
	for i := range 2 {
		resp, err := a.Post(url, "text/plain", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnsupportedMediaType {
			t.Fatalf("offer %d: %d, want 415", i+1, resp.StatusCode)
		}
	}
	resp, err := a.Post(url, "application/sdp", strings.NewReader(testkit.Offer(t, testkit.OfferOptions{}).SDP))
	if err != nil {
		t.Fatal(err)
	}
	b0, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b0)
	if ra := resp.Header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After %q, want 1 (a token a second)", ra)
	}
	checkProblem(t, resp, body, http.StatusTooManyRequests, probOfferRate, "too many offers from your address (1 a second, bursts of 2)")
	othersGetIn(t, srv, b, url, "offer_rate")
}

// othersGetIn checks that another client c gets a 201 while one is
// refused, and that the refusal was counted once under reason.
func othersGetIn(t *testing.T, srv *Server, c *http.Client, url, reason string) {
	t.Helper()
	if code, body := postFrom(t, c, url, testkit.Offer(t, testkit.OfferOptions{}).SDP); code != http.StatusCreated {
		t.Fatalf("offer from another client: %d %q", code, body)
	}
	if got := srv.Stats().Rejected[reason]; got != 1 {
		t.Errorf("%s rejections %d, want 1", reason, got)
	}
}

// TestHandshakeSlotAtICEStart: an answer takes no handshake slot, only
// the viewer's ICE starting does; a viewer whose ICE starts while every
// slot is taken is closed, and once one is free a viewer connects.
func TestHandshakeSlotAtICEStart(t *testing.T) {
	src := newTestSource()
	p := src.publish("live/cam1")
	srv, hs := startServer(t, src, func(c *Config) {
		c.Limits.MaxHandshakes = 1
		c.Limits.ICEStartTimeout = 5 * time.Second
	})
	url := hs.URL + "/live/cam1/whep"
	// Silent offers from three addresses (the per-client cap is the
	// total's, 1): all answered while the one handshake slot stays free.
	for _, ip := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		if code, body := postFrom(t, clientFrom(ip), url, testkit.Offer(t, testkit.OfferOptions{}).SDP); code != http.StatusCreated {
			t.Fatalf("silent offer from %s: %d %q", ip, code, body)
		}
	}
	if st := srv.Stats(); st.HandshakesInFlight != 0 || st.PendingOffers != 3 {
		t.Fatalf("after three silent offers: %d handshakes, %d pending; want 0 and 3", st.HandshakesInFlight, st.PendingOffers)
	}

	// The only slot is taken (a handshake in flight elsewhere).
	if srv.admission.Handshakes.Acquire("elsewhere") != admission.SlotTaken {
		t.Fatal("the free slot could not be taken")
	}
	applyAnswer(t, clientFrom("127.0.0.1"), url)
	testkit.WaitFor(t, 10*time.Second, "the viewer without a slot to be closed", func() bool {
		return srv.Stats().Rejected["handshake_limit"] == 1
	})
	if p.attachedCount() != 0 {
		t.Fatal("a viewer without a handshake slot was attached")
	}

	srv.admission.Handshakes.Release("elsewhere")
	connected := applyAnswer(t, clientFrom("127.0.0.1"), url)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	select {
	case <-connected:
	case <-ctx.Done():
		t.Fatal("viewer did not connect with the slot free")
	}
	testkit.WaitFor(t, 10*time.Second, "the connected viewer to attach and give its slot back", func() bool {
		return p.attachedCount() == 1 && srv.Stats().HandshakesInFlight == 0
	})
}

// applyAnswer posts a real offer from c, applies the answer and returns a
// channel closed once the viewer's connection is up.
func applyAnswer(t *testing.T, c *http.Client, url string) <-chan struct{} {
	t.Helper()
	off := testkit.Offer(t, testkit.OfferOptions{})
	code, answer := postFrom(t, c, url, off.SDP)
	if code != http.StatusCreated {
		t.Fatalf("viewer: %d %q", code, answer)
	}
	return connectWith(t, off, answer)
}

// connectWith applies an answer to off and returns a channel closed once
// its connection is up.
func connectWith(t *testing.T, off *testkit.Offerer, answer string) <-chan struct{} {
	t.Helper()
	connected := make(chan struct{})
	var once sync.Once
	off.PC.OnConnectionStateChange(func(s webrtc.PeerConnectionState) {
		if s == webrtc.PeerConnectionStateConnected {
			once.Do(func() { close(connected) })
		}
	})
	if err := off.PC.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		t.Fatal(err)
	}
	return connected
}

// A viewer that connects raises its address's offer bucket while it stays
// (admission.OfferBuckets.Joined), and leaving lowers it again; an offer
// that never starts ICE raises nothing.
func TestConnectedViewersRaiseOfferBucket(t *testing.T) {
	src := newTestSource()
	src.publish("live/cam1")
	srv, hs := startServer(t, src, nil)
	url := hs.URL + "/live/cam1/whep"
	c := clientFrom("127.0.0.2")
	if code, body := postFrom(t, c, url, testkit.Offer(t, testkit.OfferOptions{}).SDP); code != http.StatusCreated {
		t.Fatalf("silent offer: %d %q", code, body)
	}
	var viewers []*testkit.Offerer
	for i := range 2 {
		off := testkit.Offer(t, testkit.OfferOptions{})
		code, answer := postFrom(t, c, url, off.SDP)
		if code != http.StatusCreated {
			t.Fatalf("viewer %d: %d %q", i+1, code, answer)
		}
		awaitConnectedPC(t, connectWith(t, off, answer), "viewer")
		viewers = append(viewers, off)
	}
	testkit.WaitFor(t, 10*time.Second, "both viewers to count for 127.0.0.2", func() bool {
		return srv.admission.Offers.Live("127.0.0.2") == 2
	})
	if n := srv.admission.Offers.Live("127.0.0.1"); n != 0 {
		t.Errorf("another address has %d live viewers", n)
	}
	_ = viewers[0].PC.Close()
	testkit.WaitFor(t, 15*time.Second, "the viewer that left to stop counting", func() bool {
		return srv.admission.Offers.Live("127.0.0.2") == 1
	})
}
