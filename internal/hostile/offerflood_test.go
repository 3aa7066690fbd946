package hostile

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// TestOfferFlood: 16 addresses (127.0.0.10…25) each post 10 valid offers
// a second that never start ICE, for 5 s, while a legitimate client from
// 127.0.0.2 posts and plays once a second. The legitimate client must get
// its 201 at least 90 % of the time (before the offer bucket and the
// pending table: 2 of 5, because every answered offer held one of the 32
// handshake slots until the ICE start timeout), and the bystander keeps
// its frame rate. HOSTILE_OFFERFLOOD=SECONDS (make bench: 60) makes it
// long.
func TestOfferFlood(t *testing.T) {
	t.Parallel()
	seconds := 5
	if v := os.Getenv("HOSTILE_OFFERFLOOD"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("HOSTILE_OFFERFLOOD=%q: want seconds, e.g. 60", v)
		}
		seconds = n
	}
	const attackers, perSecond = 16, 10
	srv := startServer(t, "")
	b := startBystander(t, srv)
	publishTestPattern(t, srv, "live/flood")
	// Once a viewer plays, the path has its stream (a 409 before).
	testkit.WaitFor(t, 15*time.Second, "live/flood to play", func() bool {
		code, ok := legitViewer(t, srv.URL("/live/flood/whep"), httpClientFrom(net.IPv4(127, 0, 0, 3)))
		return code == http.StatusCreated && ok
	})
	url := srv.URL("/live/flood/whep")

	// Valid offers from peers closed at once: the server answers them,
	// and no ICE check ever follows. One per attacker, posted again and
	// again: each POST is a new session to the server.
	offers := make([]string, attackers)
	for i := range offers {
		o := testkit.Offer(t, testkit.OfferOptions{})
		offers[i] = o.SDP
		_ = o.PC.Close()
	}

	rssBefore := rss(t, srv)
	linesBefore := len(srv.Log.Lines())
	var mu sync.Mutex
	attack := map[int]int{} // status → count; 0: the POST failed
	var wg sync.WaitGroup
	start := time.Now()
	for i := range attackers {
		ip := net.IPv4(127, 0, 0, byte(10+i))
		c := httpClientFrom(ip)
		wg.Go(func() {
			defer c.CloseIdleConnections()
			for n := range perSecond * seconds {
				if ahead := time.Duration(n)*time.Second/perSecond - time.Since(start); ahead > 0 {
					time.Sleep(ahead) // pacing to the rate, not a wait for a state
				}
				code := 0
				if resp, err := c.Post(url, "application/sdp", strings.NewReader(offers[i])); err == nil {
					code = resp.StatusCode
					resp.Body.Close()
				}
				mu.Lock()
				attack[code]++
				mu.Unlock()
			}
		})
	}

	// The legitimate client: a new viewer each second, from its own
	// address, which must be answered, connect and receive a keyframe;
	// each runs on its own, so a slow one does not delay the next POST.
	legit := httpClientFrom(net.IPv4(127, 0, 0, 2))
	var posts, created, played int
	legitCodes := map[int]int{}
	for n := range seconds {
		if ahead := time.Duration(n)*time.Second - time.Since(start); ahead > 0 {
			time.Sleep(ahead) // pacing to the rate, not a wait for a state
		}
		posts++
		wg.Go(func() {
			code, ok := legitViewer(t, url, legit)
			if code != http.StatusCreated || !ok {
				t.Logf("legitimate viewer: POST %d, played %v", code, ok)
			}
			mu.Lock()
			defer mu.Unlock()
			legitCodes[code]++
			if code == http.StatusCreated {
				created++
			}
			if ok {
				played++
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	rssPeak := rss(t, srv)
	// The answered offers are closed after the ICE start timeout.
	testkit.WaitFor(t, 15*time.Second, "the flood's sessions to be closed", func() bool {
		return metric(t, srv, `srtwhep_webrtc_sessions{state="connecting"}`) == 0
	})
	rssAfter := rss(t, srv)
	lines := len(srv.Log.Lines()) - linesBefore

	pct := 100 * float64(created) / float64(posts)
	t.Logf("offer flood: %d attackers × %d offers/s for %.1f s: %d posted; attackers got %d × 201, %d × 429, %d × 503, %d other (%v)",
		attackers, perSecond, elapsed.Seconds(), attackers*perSecond*seconds,
		attack[http.StatusCreated], attack[http.StatusTooManyRequests], attack[http.StatusServiceUnavailable],
		attackers*perSecond*seconds-attack[http.StatusCreated]-attack[http.StatusTooManyRequests]-attack[http.StatusServiceUnavailable], attack)
	t.Logf("offer flood: legitimate client: %d of %d POSTs got 201 (%.0f %%), %d played (%v); server RSS %.1f MB → %.1f MB at the end of the flood (+%.1f MB), %.1f MB once its offers were closed",
		created, posts, pct, played, legitCodes, float64(rssBefore)/1e6, float64(rssPeak)/1e6, float64(rssPeak-rssBefore)/1e6, float64(rssAfter)/1e6)
	t.Logf("offer flood: %d log lines in %.1f s", lines, elapsed.Seconds())
	// The legitimate viewers' own lines (a few each) and one line a
	// second per refusal kind; a line per flooding offer would be ~200 a
	// second.
	if max := 15*seconds + 20; lines > max {
		t.Errorf("%d log lines for the flood, want at most %d", lines, max)
	}
	if pct < 90 {
		t.Errorf("the legitimate client got 201 for %.0f %% of its POSTs, want ≥ 90 %%", pct)
	}
	if played < created*9/10 {
		t.Errorf("the legitimate client played %d of its %d answered viewers", played, created)
	}
	b.Check(t)
}

// legitViewer dials a viewer through c and reports the POST's status (0:
// no answer) and whether the viewer then received a keyframe.
func legitViewer(t *testing.T, url string, c *http.Client) (code int, played bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := whepclient.Dial(ctx, url, whepclient.Options{HTTPClient: c,
		SettingEngine: func(se *webrtc.SettingEngine) { testkit.LoopbackOnly(se) }})
	var he *whepclient.HTTPError
	switch {
	case errors.As(err, &he):
		return he.StatusCode, false
	case err != nil:
		return 0, false
	}
	defer s.Close()
	if s.WaitConnected(ctx) != nil {
		return http.StatusCreated, false
	}
	// A keyframe comes within the publisher's 1 s GOP.
	for s.Stats().Keyframes == 0 {
		select {
		case <-ctx.Done():
			return http.StatusCreated, false
		case <-time.After(20 * time.Millisecond):
		}
	}
	return http.StatusCreated, true
}
