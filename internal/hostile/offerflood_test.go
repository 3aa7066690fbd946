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
	seconds := floodSeconds(t)
	const attackers, perSecond = 16, 10
	srv := startServer(t, "")
	b := startBystander(t, srv)
	url := publishPlayable(t, srv, "live/flood")

	rssBefore := rss(t, srv)
	linesBefore := len(srv.Log.Lines())
	res := floodOffers(t, url, attackers, perSecond, seconds)
	rssPeak := rss(t, srv)
	// The answered offers are closed after the ICE start timeout.
	testkit.WaitFor(t, 15*time.Second, "the flood's sessions to be closed", func() bool {
		return testkit.MustMetric(t, srv.Addrs.Metrics, "srtwhep_webrtc_sessions", "state", "connecting") == 0
	})
	rssAfter := rss(t, srv)
	lines := len(srv.Log.Lines()) - linesBefore

	res.log(t, "offer flood")
	t.Logf("offer flood: server RSS %.1f MB → %.1f MB at the end of the flood (+%.1f MB), %.1f MB once its offers were closed",
		float64(rssBefore)/1e6, float64(rssPeak)/1e6, float64(rssPeak-rssBefore)/1e6, float64(rssAfter)/1e6)
	t.Logf("offer flood: %d log lines in %.1f s", lines, res.elapsed.Seconds())
	// The legitimate viewers' own lines (a few each) and one line a
	// second per refusal kind; a line per flooding offer would be ~200 a
	// second.
	if max := 15*seconds + 20; lines > max {
		t.Errorf("%d log lines for the flood, want at most %d", lines, max)
	}
	res.check(t)
	b.Check(t)
}

// TestOfferFloodCappedPath is TestOfferFlood on a path with maxReaders: 4
// that two viewers already watch: the flood's answered offers never start
// ICE, so they hold no reader slot, and the legitimate client still gets
// its 201 at least 90 % of the time and plays (before pending offers
// stopped counting against the cap: each held a slot for the 2 s ICE
// start timeout, and the path was full for the whole flood). The two
// viewers keep their frame rate, and real viewers still fill the path:
// with four playing, the next POST gets 503 path-full.
func TestOfferFloodCappedPath(t *testing.T) {
	t.Parallel()
	seconds := floodSeconds(t)
	const attackers, perSecond, path = 16, 10, "live/capped"
	srv := startServer(t, "paths:\n  "+path+":\n    maxReaders: 4\n")
	url := publishPlayable(t, srv, path)
	watchers := make([]*bystander, 2)
	for i := range watchers {
		s := dialViewer(t, srv, path, "capped path", whepclient.Options{Decode: true, NACK: true, ReceiverReports: true})
		watchers[i] = &bystander{viewer: s, since: time.Now(), before: s.Stats()}
	}

	res := floodOffers(t, url, attackers, perSecond, seconds)
	res.log(t, "offer flood on a capped path")
	res.check(t)
	for _, w := range watchers {
		w.Check(t)
	}

	// The cap still holds for viewers who connect: two more fill it.
	for range 2 {
		dialViewer(t, srv, path, "third or fourth", whepclient.Options{Decode: true})
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	fifth, err := whepclient.Dial(ctx, url, whepclient.Options{HTTPClient: httpClientFrom(net.IPv4(127, 0, 0, 4)),
		SettingEngine: func(se *webrtc.SettingEngine) { testkit.LoopbackOnly(se) }})
	if err == nil {
		_ = fifth.Close()
	}
	var he *whepclient.HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusServiceUnavailable || !strings.Contains(he.Error(), "path-full") {
		t.Errorf("a fifth viewer of a path with maxReaders 4: %v, want 503 path-full", err)
	}
}

// floodSeconds is how long a flood lasts: 5 s, or HOSTILE_OFFERFLOOD.
func floodSeconds(t *testing.T) int {
	t.Helper()
	v := os.Getenv("HOSTILE_OFFERFLOOD")
	if v == "" {
		return 5
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("HOSTILE_OFFERFLOOD=%q: want seconds, e.g. 60", v)
	}
	return n
}

// publishPlayable publishes the test pattern on path and returns its WHEP
// URL once a viewer plays it (a 409 before).
func publishPlayable(t *testing.T, srv *testkit.Server, path string) string {
	t.Helper()
	publishTestPattern(t, srv, path)
	url := srv.URL("/" + path + "/whep")
	testkit.WaitFor(t, 15*time.Second, path+" to play", func() bool {
		code, ok := legitViewer(t, url, httpClientFrom(net.IPv4(127, 0, 0, 3)))
		return code == http.StatusCreated && ok
	})
	return url
}

// floodResult is what floodOffers saw.
type floodResult struct {
	attackers, perSecond int
	attack               map[int]int // status → count; 0: the POST failed
	posts, created       int         // the legitimate client's POSTs and 201s
	played               int         // its viewers that connected and got a keyframe
	legitCodes           map[int]int
	elapsed              time.Duration
}

// floodOffers has attackers addresses (127.0.0.10…) each post perSecond
// valid offers a second that never start ICE, for seconds, while a
// legitimate client from 127.0.0.2 posts and plays once a second; it
// returns once all of them are done.
func floodOffers(t *testing.T, url string, attackers, perSecond, seconds int) floodResult {
	t.Helper()
	res := floodResult{attackers: attackers, perSecond: perSecond, attack: map[int]int{}, legitCodes: map[int]int{}}
	// Valid offers from peers closed at once: the server answers them,
	// and no ICE check ever follows. One per attacker, posted again and
	// again: each POST is a new session to the server.
	offers := make([]string, attackers)
	for i := range offers {
		o := testkit.Offer(t, testkit.OfferOptions{})
		offers[i] = o.SDP
		_ = o.PC.Close()
	}

	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for i := range attackers {
		ip := net.IPv4(127, 0, 0, byte(10+i))
		c := httpClientFrom(ip)
		wg.Go(func() {
			defer c.CloseIdleConnections()
			for n := range perSecond * seconds {
				if ahead := time.Duration(n)*time.Second/time.Duration(perSecond) - time.Since(start); ahead > 0 {
					time.Sleep(ahead) // pacing to the rate, not a wait for a state
				}
				code := 0
				if resp, err := c.Post(url, "application/sdp", strings.NewReader(offers[i])); err == nil {
					code = resp.StatusCode
					resp.Body.Close()
				}
				mu.Lock()
				res.attack[code]++
				mu.Unlock()
			}
		})
	}

	// The legitimate client: a new viewer each second, from its own
	// address, which must be answered, connect and receive a keyframe;
	// each runs on its own, so a slow one does not delay the next POST.
	legit := httpClientFrom(net.IPv4(127, 0, 0, 2))
	for n := range seconds {
		if ahead := time.Duration(n)*time.Second - time.Since(start); ahead > 0 {
			time.Sleep(ahead) // pacing to the rate, not a wait for a state
		}
		res.posts++
		wg.Go(func() {
			code, ok := legitViewer(t, url, legit)
			if code != http.StatusCreated || !ok {
				t.Logf("legitimate viewer: POST %d, played %v", code, ok)
			}
			mu.Lock()
			defer mu.Unlock()
			res.legitCodes[code]++
			if code == http.StatusCreated {
				res.created++
			}
			if ok {
				res.played++
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

// log reports the flood's figures under name.
func (res floodResult) log(t *testing.T, name string) {
	t.Helper()
	a, sent := res.attack, 0
	for _, n := range a {
		sent += n
	}
	t.Logf("%s: %d attackers × %d offers/s for %.1f s: %d posted; attackers got %d × 201, %d × 429, %d × 503, %d other (%v)",
		name, res.attackers, res.perSecond, res.elapsed.Seconds(), sent,
		a[http.StatusCreated], a[http.StatusTooManyRequests], a[http.StatusServiceUnavailable],
		sent-a[http.StatusCreated]-a[http.StatusTooManyRequests]-a[http.StatusServiceUnavailable], a)
	t.Logf("%s: legitimate client: %d of %d POSTs got 201 (%.0f %%), %d played (%v)",
		name, res.created, res.posts, res.pct(), res.played, res.legitCodes)
}

func (res floodResult) pct() float64 { return 100 * float64(res.created) / float64(res.posts) }

// check fails the test unless the legitimate client got 201 for at least
// 90 % of its POSTs and played at least 90 % of those.
func (res floodResult) check(t *testing.T) {
	t.Helper()
	if pct := res.pct(); pct < 90 {
		t.Errorf("the legitimate client got 201 for %.0f %% of its POSTs, want ≥ 90 %%", pct)
	}
	if res.played < res.created*9/10 {
		t.Errorf("the legitimate client played %d of its %d answered viewers", res.played, res.created)
	}
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
