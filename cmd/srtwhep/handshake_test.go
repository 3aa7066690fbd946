package main

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// TestFakeOffersDoNotBlockViewers: four offers a second whose peers never
// apply the answer (so ICE never starts) run for longer than the handshake
// timeout, from the same address as a legitimate viewer who connects again
// and again meanwhile. Each fake gives its slot back about 2 s after its
// answer, so at most ~9 are ever in flight: every legitimate POST gets 201
// and connects. (Before, each held one of the 32 slots for the whole
// 10 s handshake timeout, and 3.7 a second made 60 % of real POSTs fail.)
func TestFakeOffersDoNotBlockViewers(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	startFFmpeg(t, x264Args("320x240"), ts.srtURL("publish:live/cam"))
	ts.waitPublisher(t, "live/cam")

	const run = 12 * time.Second // past the 10 s handshake timeout
	ctx, cancel := context.WithTimeout(t.Context(), run)
	defer cancel()
	var wg sync.WaitGroup
	fakes := 0
	fakePosted := make(chan struct{}, 1)
	wg.Go(func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			// The offer's PeerConnection never sees the answer; it is
			// closed at the end of the test.
			off := testkit.Offer(t, testkit.OfferOptions{Codecs: h264Only})
			code, _, body := request(t, http.MethodPost, ts.httpURL("/live/cam/whep"), "", "application/sdp", off.SDP)
			if code != http.StatusCreated && code != http.StatusServiceUnavailable {
				t.Errorf("fake offer: %d %q", code, body)
			}
			fakes++
			select {
			case fakePosted <- struct{}{}:
			default:
			}
		}
	})

	maxInFlight, viewers := 0, 0
	for ctx.Err() == nil {
		dctx, dcancel := context.WithTimeout(t.Context(), 10*time.Second)
		s, err := whepclient.Dial(dctx, ts.httpURL("/live/cam/whep"), whepclient.Options{SettingEngine: testkit.LoopbackOnly})
		if err != nil {
			dcancel()
			t.Fatalf("legitimate viewer %d after %d fakes: %v", viewers, fakes, err)
		}
		err = s.WaitConnected(dctx)
		dcancel()
		_ = s.Close()
		if err != nil {
			t.Fatalf("legitimate viewer %d did not connect: %v", viewers, err)
		}
		viewers++
		maxInFlight = max(maxInFlight, ts.whep.Stats().HandshakesInFlight)
		// The next legitimate viewer comes with the next fake offer: one
		// of each, in step, for the whole run.
		select {
		case <-fakePosted:
		case <-ctx.Done():
		}
	}
	wg.Wait()
	t.Logf("%d legitimate viewers connected among %d fake offers; at most %d handshakes in flight", viewers, fakes, maxInFlight)
	if fakes < 40 || viewers < 8 {
		t.Fatalf("%d fakes, %d viewers: the test did not run as designed", fakes, viewers)
	}
	if st := ts.whep.Stats(); st.HandshakeFailures < uint64(fakes)-12 {
		t.Errorf("%d handshake failures for %d fake offers", st.HandshakeFailures, fakes)
	}
}
