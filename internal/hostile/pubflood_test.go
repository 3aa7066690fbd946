package hostile

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haivision/srtgo"

	"github.com/srtwhep/srtwhep/internal/srtcall"
	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/api"
)

// TestPublisherFlood: 200 publisher connections from one address, each
// on a path of its own, each sending garbage and then a packet a second.
// The server takes the first srt.maxPublishersPerIP (10) and refuses the
// rest in the handshake with overload (1402); those it took hold at most
// the pre-PMT limit each before they are closed for sending no MPEG-TS;
// none shows in /v1/paths; RSS stays bounded; the bystander plays on.
// On main before the caps: all 200 were taken, each one a path in
// /v1/paths while it waited for tables. The short version sends 2 MiB
// per connection (past the 1 MiB pre-PMT limit) and a packet a second for
// 5 s; HOSTILE_PUBFLOOD=MIB (make bench: 8) sends MIB and goes on for 30 s.
func TestPublisherFlood(t *testing.T) {
	t.Parallel()
	const conns = 200
	garbage, tail := 2<<20, 5*time.Second
	if v := os.Getenv("HOSTILE_PUBFLOOD"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("HOSTILE_PUBFLOOD=%q: want MiB per connection, e.g. 8", v)
		}
		garbage, tail = n<<20, 30*time.Second
	}
	srv := startServer(t, "")
	b := startBystander(t, srv)
	addr, err := net.ResolveUDPAddr("udp", srv.Addrs.SRT)
	if err != nil {
		t.Fatal(err)
	}
	before := pathNames(t, srv)
	rssBefore := rss(t, srv)
	linesBefore := len(srv.Log.Lines())

	var (
		mu                        sync.Mutex
		reasons                   = map[string]int{}
		accepted                  int
		sent                      atomic.Int64
		peakRSS, peakPaths, polls int
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// Sample while the flood runs: a path that shows up only while its
	// connection waits for tables is caught here.
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			r, extra := rss(t, srv), len(pathNames(t, srv))-len(before)
			mu.Lock()
			peakRSS, peakPaths, polls = max(peakRSS, r), max(peakPaths, extra), polls+1
			mu.Unlock()
		}
	}()
	start := time.Now()
	jobs := make(chan int)
	for range 20 {
		wg.Go(func() {
			for i := range jobs {
				sock, err := srtcall.Dial(addr, srtcall.Options{StreamID: fmt.Sprintf("publish:flood/%d", i), LocalIP: source(0)})
				if err != nil {
					var re *srtcall.RejectedError
					key := err.Error()
					if errors.As(err, &re) {
						key = strconv.Itoa(re.Reason)
					}
					mu.Lock()
					reasons[key]++
					mu.Unlock()
					continue
				}
				mu.Lock()
				accepted++
				mu.Unlock()
				wg.Go(func() {
					defer srtcall.Close(sock)
					sent.Add(int64(sendGarbage(sock, garbage, tail, stop)))
				})
			}
		})
	}
	for i := range conns {
		jobs <- i
	}
	close(jobs)
	time.Sleep(tail) // the senders' packet a second, not a wait for a state
	close(stop)
	wg.Wait()
	<-sampled
	elapsed := time.Since(start)
	after := pathNames(t, srv)
	grown := rss(t, srv) - rssBefore
	lines := len(srv.Log.Lines()) - linesBefore
	// What the server took is in its log: a handshake completed in the
	// same burst as others may be accepted by libsrt and closed by the
	// server at once, which the caller sees as a connect. A connection
	// closed for its garbage frees its place, so more than the cap are
	// taken over the flood, never more than the cap at once.
	taken, atOnce, open := 0, 0, 0
	for _, l := range srv.Log.Lines("path=flood/") {
		switch {
		case strings.Contains(l, `msg="publisher connected"`):
			taken++
			open++
			atOnce = max(atOnce, open)
		case strings.Contains(l, `msg="publisher closed"`) && strings.Contains(l, "component=srt"):
			open--
		}
	}

	t.Logf("publisher flood from %v: %d connections in %.1f s, %d connected, %d taken by the server (at most %d at once), refused by reason %v; %.1f MB of garbage sent",
		source(0), conns, elapsed.Seconds(), accepted, taken, atOnce, reasons, float64(sent.Load())/1e6)
	t.Logf("server RSS %.1f MB before, peak %.1f MB (+%.1f MB), +%.1f MB after; /v1/paths: %d before, at most %d more during the flood (%d samples), %d after; %d log lines",
		mb(rssBefore), mb(peakRSS), mb(peakRSS-rssBefore), mb(grown), len(before), peakPaths, polls, len(after), lines)
	if atOnce > 10 {
		t.Errorf("%d connections from one address at once, want at most srt.maxPublishersPerIP (10)", atOnce)
	}
	if n := reasons[strconv.Itoa(srtgo.RejectionReasonOverload)]; n < conns/2 {
		t.Errorf("%d refused with overload (1402), want most of the %d", n, conns)
	}
	for r, n := range reasons {
		// 0: no reason, the caller connected and the server closed it
		// before its dial returned (the cap checked again at accept).
		// Any other reason, a timeout's 16 included, is not the cap's.
		if r != "0" && r != strconv.Itoa(srtgo.RejectionReasonOverload) {
			t.Errorf("%d refused with reason %s, want overload (1402)", n, r)
		}
	}
	if peakPaths > 0 || !slices.Equal(before, after) {
		t.Errorf("/v1/paths changed: %v before, %v after, up to %d more during the flood", before, after, peakPaths)
	}
	if peakRSS-rssBefore > 100<<20 {
		t.Errorf("RSS grew by %.1f MB during the flood, want under 100 MB", mb(peakRSS-rssBefore))
	}
	// One line as each connection taken opens and closes, and the
	// refusals summarised: a few a second.
	if max := 2*taken + 3*int(elapsed.Seconds()) + 20; lines > max {
		t.Errorf("%d log lines for the flood, want at most %d: the refusals summarised", lines, max)
	}
	b.Check(t)
}

// sendGarbage writes n random bytes in SRT messages of 1316 bytes as fast
// as the socket takes them, then one message a second until stop or the
// server closes the connection; it returns the bytes sent.
func sendGarbage(sock *srtgo.SrtSocket, n int, tail time.Duration, stop <-chan struct{}) int {
	rnd := rand.New(rand.NewPCG(uint64(n), 7))
	buf := make([]byte, 1316)
	sent := 0
	for sent < n {
		for i := range buf {
			buf[i] = byte(rnd.Uint32())
		}
		if _, err := sock.Write(buf); err != nil {
			return sent
		}
		sent += len(buf)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for end := time.After(tail); ; {
		select {
		case <-stop:
			return sent
		case <-end:
			return sent
		case <-tick.C:
		}
		if _, err := sock.Write(buf); err != nil {
			return sent
		}
		sent += len(buf)
	}
}

// pathNames are the names GET /v1/paths lists, sorted.
func pathNames(t *testing.T, srv *testkit.Server) []string {
	t.Helper()
	resp, err := http.Get(srv.APIURL("/v1/paths"))
	if err != nil {
		t.Errorf("GET /v1/paths: %v", err)
		return nil
	}
	defer resp.Body.Close()
	var body struct{ Paths []api.Path }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Errorf("GET /v1/paths: %v", err)
		return nil
	}
	var names []string
	for _, p := range body.Paths {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}
