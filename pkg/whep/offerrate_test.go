package whep

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

func TestOfferBucket(t *testing.T) {
	now := time.Unix(1000, 0)
	b := newOfferBuckets(2, 3, 16)
	b.now = func() time.Time { return now }
	for i := range 3 {
		if ok, _ := b.take("a"); !ok {
			t.Fatalf("offer %d of the burst refused", i+1)
		}
	}
	ok, wait := b.take("a")
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("past the burst: ok=%v wait=%v, want refused, 500ms (2 a second)", ok, wait)
	}
	if got := retryAfter(wait); got != 1 {
		t.Errorf("Retry-After for %v: %d, want 1", wait, got)
	}
	// Another client has its own bucket.
	if ok, _ := b.take("b"); !ok {
		t.Fatal("b refused while a is over its rate")
	}
	now = now.Add(250 * time.Millisecond)
	if ok, wait := b.take("a"); ok || wait != 250*time.Millisecond {
		t.Fatalf("half a token later: ok=%v wait=%v, want refused, 250ms", ok, wait)
	}
	now = now.Add(250 * time.Millisecond)
	if ok, _ := b.take("a"); !ok {
		t.Fatal("a token later: refused")
	}
	// Quiet for long enough to refill: the bucket holds the burst, no more.
	now = now.Add(time.Hour)
	for i := range 3 {
		if ok, _ := b.take("a"); !ok {
			t.Fatalf("after an hour, offer %d refused", i+1)
		}
	}
	if ok, _ := b.take("a"); ok {
		t.Fatal("after an hour: more than the burst let through")
	}
	if got := retryAfter(2500 * time.Millisecond); got != 3 {
		t.Errorf("Retry-After for 2.5 s: %d, want 3 (rounded up)", got)
	}
}

// The bucket table stays at its bound however many addresses post: a
// refilled bucket goes first, else the one seen longest ago, and expire
// empties the table once everyone is quiet.
func TestOfferBucketTableBound(t *testing.T) {
	now := time.Unix(1000, 0)
	const max = 8
	b := newOfferBuckets(1, 2, max)
	b.now = func() time.Time { return now }
	for i := range 10 * max {
		now = now.Add(time.Millisecond)
		if ok, _ := b.take(fmt.Sprint("10.0.0.", i)); !ok {
			t.Fatalf("first offer of address %d refused", i)
		}
		if n := b.size(); n > max {
			t.Fatalf("after %d addresses the table holds %d, bound %d", i+1, n, max)
		}
	}
	// The newest address was not the one evicted: its bucket remembers.
	last := fmt.Sprint("10.0.0.", 10*max-1)
	b.take(last)
	if ok, _ := b.take(last); ok {
		t.Error("the newest address got a fresh bucket: it was evicted")
	}
	now = now.Add(3 * time.Second) // burst 2 at 1 a second: refilled
	b.expire()
	if n := b.size(); n != 0 {
		t.Errorf("after everyone went quiet the table holds %d", n)
	}
}

// A full table evicts the client seen longest ago, not the one added
// first: a client that keeps posting keeps its (emptied) bucket.
func TestOfferBucketEvictsLeastRecentlySeen(t *testing.T) {
	now := time.Unix(1000, 0)
	const max = 4
	b := newOfferBuckets(1, 2, max)
	b.now = func() time.Time { return now }
	step := func(key string) bool {
		now = now.Add(time.Millisecond)
		ok, _ := b.take(key)
		return ok
	}
	for i := range max {
		step(fmt.Sprint("c", i))
	}
	// c0 empties its bucket and is now the most recently seen.
	step("c0")
	if step("c0") {
		t.Fatal("c0 had more than its burst of 2")
	}
	step("new") // the table is full: c1 goes
	if n := b.size(); n != max {
		t.Fatalf("table holds %d, want %d", n, max)
	}
	if step("c0") {
		t.Error("c0 got a fresh bucket: it was evicted although c1 was seen longer ago")
	}
	step("new2") // c2 goes next
	// c1 comes back with a fresh bucket of 2 (evicting c3).
	if !step("c1") || !step("c1") {
		t.Error("c1 was kept although it was seen longest ago")
	}
}

// Past its burst a client gets 429 with Retry-After and the offer-rate
// problem, before anything else is looked at; another address does not.
func TestOfferRate429(t *testing.T) {
	src := newTestSource()
	src.publish("live/cam1")
	srv, hs := startServer(t, src, func(c *Config) {
		c.OfferRate = 1
		c.OfferBurst = 2
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
		c.MaxHandshakes = 1
		c.ICEStartTimeout = 5 * time.Second
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
	if srv.handshakes.acquire("elsewhere") != handshakeOK {
		t.Fatal("the free slot could not be taken")
	}
	applyAnswer(t, clientFrom("127.0.0.1"), url)
	testkit.WaitFor(t, 10*time.Second, "the viewer without a slot to be closed", func() bool {
		return srv.Stats().Rejected["handshake_limit"] == 1
	})
	if p.attachedCount() != 0 {
		t.Fatal("a viewer without a handshake slot was attached")
	}

	srv.handshakes.release("elsewhere")
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
