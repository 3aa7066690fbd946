package hostile

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/procstart"
	"github.com/srtwhep/srtwhep/internal/testkit"
)

// TestEdgeRandomPulls runs an origin and an edge that pulls every path
// from it, and POSTs WHEP offers for random path names from four sources:
// each name costs the origin one dial however often it is asked (the edge
// remembers the refusal), and past srt.maxPulls a viewer gets 503 with
// Retry-After instead of a new pull. The edge's own publisher and viewer
// keep their frame rate.
func TestEdgeRandomPulls(t *testing.T) {
	t.Parallel()
	origin := startServer(t, "")
	// A source that never answers: pulls of its paths stay up (dialling,
	// backing off, lingering), which is what fills the cap.
	dead, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	const maxPulls, names, deadPaths = 8, 40, 8
	var paths strings.Builder
	for i := range deadPaths + 1 {
		fmt.Fprintf(&paths, "  dead/p%d:\n    source: srt://%s\n    sourceLinger: 60s\n", i, dead.LocalAddr())
	}
	cfg := procstart.LoopbackConfig("", fmt.Sprintf(
		"pathDefaults:\n  source: srt://%s\n  sourceTimeout: 3s\npaths:\n%s", origin.Addrs.SRT, paths.String()))
	cfg = strings.Replace(cfg, "srt:\n", fmt.Sprintf("srt:\n  maxPulls: %d\n", maxPulls), 1)
	edge := testkit.StartServer(t, testkit.BuildBinary(t, "./cmd/srtwhep"), cfg)
	b := startBystander(t, edge)
	offer := testkit.Offer(t, testkit.OfferOptions{}).SDP

	post := func(c *http.Client, path string) (int, http.Header, string) {
		resp, err := c.Post(edge.URL("/"+path+"/whep"), "application/sdp", strings.NewReader(offer))
		if err != nil {
			t.Errorf("POST %s: %v", path, err)
			return 0, nil, ""
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, resp.Header, string(body)
	}
	// Random names, twice each, from four sources at once.
	const sources = 4
	var wg sync.WaitGroup
	statuses := make([][]int, sources)
	for s := range sources {
		wg.Go(func() {
			c := httpClientFrom(source(s))
			for range 2 {
				for i := s; i < names; i += sources {
					code, _, _ := post(c, fmt.Sprintf("rnd/%d-x%d", i, 7919*i%1000))
					statuses[s] = append(statuses[s], code)
				}
			}
		})
	}
	wg.Wait()
	notFound := 0
	for _, st := range statuses {
		for _, code := range st {
			if code == http.StatusNotFound {
				notFound++
			}
		}
	}
	// The origin summarises its rejections a second later: wait until
	// they account for one dial per name at least.
	testkit.WaitFor(t, 10*time.Second, "the origin's rejection lines for every name", func() bool {
		return rejections(origin.Log.Lines("srt reader rejected", "rnd/")) >= names
	})
	dials := rejections(origin.Log.Lines("srt reader rejected", "rnd/"))
	t.Logf("%d POSTs for %d random names from %s: %d answered 404; the origin saw %d dials",
		2*names, names, describeSources(sources), notFound, dials)
	if notFound != 2*names {
		t.Errorf("%d of %d POSTs for random names got 404, want all", notFound, 2*names)
	}
	if dials > names {
		t.Errorf("the origin saw %d dials for %d names asked twice, want at most one each", dials, names)
	}

	// Fill the cap with pulls of the dead source, then one more.
	statuses = make([][]int, deadPaths)
	for i := range deadPaths {
		wg.Go(func() {
			code, _, _ := post(httpClientFrom(source(i%sources)), fmt.Sprintf("dead/p%d", i))
			statuses[i] = []int{code}
		})
	}
	wg.Wait()
	for i, st := range statuses {
		if len(st) != 1 || st[0] != http.StatusGatewayTimeout {
			t.Errorf("dead/p%d: %v, want 504 (the source never answers)", i, st)
		}
	}
	code, hdr, body := post(httpClientFrom(source(0)), fmt.Sprintf("dead/p%d", deadPaths))
	t.Logf("POST past %d pulls: %d Retry-After=%q %s", maxPulls, code, hdr.Get("Retry-After"), body)
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" ||
		!strings.HasPrefix(hdr.Get("Content-Type"), "application/problem+json") || !strings.Contains(body, "limit") {
		t.Errorf("POST past the cap: %d %v %s, want 503 + Retry-After with a problem detail", code, hdr, body)
	}
	// The line reaches the test through the server's stderr pipe, so it
	// may arrive after the answer did.
	edge.WaitLog(t, 5*time.Second, "edge pull refused: too many pulls")
	if n := len(edge.Log.Lines("edge pull refused: too many pulls")); n != 1 {
		t.Errorf("%d cap lines for one refusal, want 1", n)
	}
	b.Check(t)
}

// rejections counts the handshakes behind the origin's rejection lines: a
// line stands for one, or for count= of them when it summarises a second.
func rejections(lines []string) int {
	n := 0
	for _, l := range lines {
		c := 1
		if _, rest, ok := strings.Cut(l, " count="); ok {
			if v, err := strconv.Atoi(strings.Fields(rest)[0]); err == nil {
				c = v
			}
		}
		n += c
	}
	return n
}
