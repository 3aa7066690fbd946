package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/config"
)

// The leak test's shape: rounds of publishers that each get viewers, all
// of whom come and go. 5 measured rounds of 6 publishers × 10 viewers are
// the 30 publisher sessions and 300 WHEP sessions; one more round first
// brings the server to the same peak (heap arenas, pion's buffer pools,
// the GOP caches), so the baseline already includes what a peak costs
// once and only what grows per session can show.
const (
	leakRounds     = 5
	leakPublishers = 6
	leakViewers    = 10 // per publisher
)

// The slack over the baseline. The live heap after a forced GC is the
// precise measure: it was flat within 0.1 MiB over 300 sessions, and a
// leak of what one session really holds (a PeerConnection with its SRTP
// contexts, interceptors and buffers, well over 100 KiB) is 30 MiB and
// more across 300. RSS also counts pages the runtime has freed but not yet
// returned to the OS (its scavenger does that lazily): it was 5–9 MiB
// above the baseline with a flat live heap, hence a wider slack; it still
// catches memory that is not Go heap (cgo, libsrt) growing per session.
const (
	leakHeapSlack = 4 << 20
	leakRSSSlack  = 16 << 20
)

// serverUsage is the real server process's goroutines, open FDs and RSS.
type serverUsage struct {
	goroutines, fds int
	rss, heap       uint64 // heap: HeapAlloc right after a GC, the live heap
	dump            string // the goroutine profile, for a failure message
}

func (u serverUsage) String() string {
	return fmt.Sprintf("%d goroutines, %d FDs, RSS %.1f MiB, live heap %.1f MiB",
		u.goroutines, u.fds, float64(u.rss)/(1<<20), float64(u.heap)/(1<<20))
}

// usageOf forces a GC in the server (pprof's heap?gc=1) so the RSS read
// after it compares like with like, then reads the goroutine profile and
// /proc. Keep-alives are off: an idle connection of ours would be a
// server goroutine and FD that the server did not leak.
func usageOf(t *testing.T, proc procfs.Proc, pprofBase string) serverUsage {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(path string) string {
		resp, err := c.Get(pprofBase + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %v", path, resp.Status, err)
		}
		return string(b)
	}
	var u serverUsage
	heap := get("/debug/pprof/heap?gc=1&debug=1")
	_, after, _ := strings.Cut(heap, "\n# HeapAlloc = ")
	if _, err := fmt.Sscanf(after, "%d", &u.heap); err != nil {
		t.Fatalf("no HeapAlloc in the heap profile: %v", err)
	}
	u.dump = get("/debug/pprof/goroutine?debug=1")
	first, _, _ := strings.Cut(u.dump, "\n")
	if _, err := fmt.Sscanf(first, "goroutine profile: total %d", &u.goroutines); err != nil {
		t.Fatalf("goroutine profile starts %q: %v", first, err)
	}
	st, err := proc.Stat()
	if err != nil {
		t.Fatal(err)
	}
	u.rss = uint64(st.ResidentMemory())
	if u.fds, err = proc.FileDescriptorsLen(); err != nil {
		t.Fatal(err)
	}
	return u
}

// leakRound publishes on leakPublishers paths at once, gives each
// leakViewers viewers that must receive media, then closes the viewers
// (DELETE) and stops the publishers: every other one with SIGKILL, so both
// a goodbye and a silent disappearance are exercised.
func leakRound(t *testing.T, srv *testkit.Server, clip string, round int, httpc *http.Client) (viewers int) {
	t.Helper()
	pubs := make([]*testkit.Process, leakPublishers)
	paths := make([]string, leakPublishers)
	for i := range pubs {
		paths[i] = fmt.Sprintf("leak/r%d/p%d", round, i)
		pubs[i] = testkit.StartFFmpeg(t, "-re", "-stream_loop", "-1", "-i", clip, "-c", "copy", "-f", "mpegts",
			srv.SRTURL("publish:"+paths[i]))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		mu       sync.Mutex
		sessions []*whepclient.Session
		errs     []error
		wg       sync.WaitGroup
	)
	// A bounded number of handshakes at a time, below the server's
	// default handshake limit, so no offer is refused for capacity.
	sem := make(chan struct{}, 12)
	dial := func(path string) {
		defer wg.Done()
		sem <- struct{}{}
		defer func() { <-sem }()
		// Until the publisher's first IDR reaches the hub the endpoint
		// answers 409: retry that, and only that, until ctx ends.
		for ctx.Err() == nil {
			s, err := whepclient.Dial(ctx, srv.URL("/"+path+"/whep"), whepclient.Options{
				HTTPClient: httpc, SettingEngine: testkit.LoopbackOnly})
			if err == nil {
				err = s.WaitConnected(ctx)
				mu.Lock()
				sessions = append(sessions, s)
				mu.Unlock()
			}
			if he, ok := err.(*whepclient.HTTPError); ok && he.StatusCode == http.StatusConflict {
				t := time.NewTimer(100 * time.Millisecond)
				select {
				case <-t.C:
				case <-ctx.Done():
				}
				t.Stop()
				continue
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", path, err))
				mu.Unlock()
			}
			return
		}
		mu.Lock()
		errs = append(errs, fmt.Errorf("%s: %w", path, ctx.Err()))
		mu.Unlock()
	}
	for _, p := range paths {
		for range leakViewers {
			wg.Add(1)
			go dial(p)
		}
	}
	wg.Wait()
	defer func() {
		for _, s := range sessions {
			_ = s.Close()
		}
	}()
	if len(errs) > 0 {
		t.Fatalf("round %d: %d of %d viewers failed, first: %v", round, len(errs), leakPublishers*leakViewers, errs[0])
	}
	testkit.WaitFor(t, 20*time.Second, fmt.Sprintf("round %d: media at every viewer", round), func() bool {
		for _, s := range sessions {
			if s.Stats().Packets == 0 {
				return false
			}
		}
		return true
	})
	for _, s := range sessions {
		if err := s.Close(); err != nil {
			t.Errorf("round %d: close viewer: %v", round, err)
		}
	}
	for i, p := range pubs {
		sig := syscall.SIGTERM
		if i%2 == 1 {
			sig = syscall.SIGKILL
		}
		_ = p.Cmd.Process.Signal(sig)
		_ = p.Wait(t, 10*time.Second)
	}
	// A killed publisher is closed by the server only once its stream
	// has been silent for the publisher timeout (2 s): the next round
	// waits for that, or its publishers from the same address would
	// count against srt.maxPublishersPerIP beside the last round's.
	testkit.WaitFor(t, 15*time.Second, fmt.Sprintf("round %d: its publishers gone", round), func() bool {
		return publishing(t, srv, httpc, paths) == 0
	})
	return len(sessions)
}

// publishing counts the paths among paths that have a publisher, as GET
// /v1/paths shows them.
func publishing(t *testing.T, srv *testkit.Server, httpc *http.Client, paths []string) int {
	t.Helper()
	n := 0
	for _, p := range apiPaths(t, httpc, srv.APIURL("/v1/paths")) {
		if p.Publisher != nil && slices.Contains(paths, p.Name) {
			n++
		}
	}
	return n
}

// TestNoLeaksAfterChurn runs the real binary through 30 publisher and 300
// WHEP sessions that come and go, and requires its goroutines, open FDs
// and RSS to come back to the baseline: what a session or a publisher
// leaves behind, even one goroutine, adds up on a server that runs for
// months.
//
// Not parallel: 360 sessions are the heaviest load of the suite, and would
// disturb the tests beside it.
func TestNoLeaksAfterChurn(t *testing.T) {
	clip := filepath.Join(t.TempDir(), "clip.ts")
	// Small and with a short GOP: viewers see media within half a second
	// and 36 publishers cost almost nothing.
	testkit.FFmpeg(t, "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30:duration=2",
		"-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-b:v", "300k",
		"-g", "15", "-bf", "0", "-f", "mpegts", clip)
	// pprof on the metrics listener gives the goroutine count.
	cfg := binaryConfig(t, func(c *config.Config) {
		c.LogLevel = "warn"
		c.Metrics.Pprof = true
	})
	srv := testkit.StartServer(t, testkit.BuildBinary(t, "./cmd/srtwhep"), cfg)
	proc, err := procfs.NewProc(srv.Cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	pprofBase := "http://" + srv.Addrs.Metrics
	// Our own HTTP connections to the server are closed before each
	// measurement, so the server's side of them is not counted as a leak.
	tr := &http.Transport{}
	httpc := &http.Client{Timeout: 10 * time.Second, Transport: tr}
	t.Cleanup(tr.CloseIdleConnections)

	fresh := usageOf(t, proc, pprofBase)
	leakRound(t, srv, clip, 0, httpc)
	tr.CloseIdleConnections()
	// The warm-up round's sessions end asynchronously (pion's goroutines,
	// the publisher's read timeout after SIGKILL): the baseline is taken
	// once the server is back near its fresh count.
	var base serverUsage
	if !pollEvery(45*time.Second, func() bool {
		base = usageOf(t, proc, pprofBase)
		return base.goroutines <= fresh.goroutines+5
	}) {
		t.Fatalf("server did not settle after the warm-up round: %v, fresh %v\n%s", base, fresh, topStacks(base.dump))
	}
	t.Logf("fresh: %v; baseline after warm-up: %v", fresh, base)

	start := time.Now()
	viewers := 0
	for r := 1; r <= leakRounds; r++ {
		viewers += leakRound(t, srv, clip, r, httpc)
	}
	tr.CloseIdleConnections()
	t.Logf("%d publisher and %d WHEP sessions in %v", leakRounds*leakPublishers, viewers, time.Since(start).Round(time.Millisecond))

	var end serverUsage
	ok := pollEvery(45*time.Second, func() bool {
		end = usageOf(t, proc, pprofBase)
		// Two goroutines and FDs of slack: a connection the server is
		// still closing when /proc is read.
		return end.goroutines <= base.goroutines+2 && end.fds <= base.fds+2 &&
			end.heap <= base.heap+leakHeapSlack && end.rss <= base.rss+leakRSSSlack
	})
	t.Logf("after churn: %v (baseline %v; slack: heap %d MiB, RSS %d MiB)", end, base, leakHeapSlack>>20, leakRSSSlack>>20)
	if !ok {
		t.Fatalf("server did not return to its baseline within 45 s: %v, baseline %v\ngoroutines now:\n%s\nbaseline goroutines:\n%s",
			end, base, topStacks(end.dump), topStacks(base.dump))
	}
}

// pollEvery checks cond every 250 ms until it holds or timeout passes.
// Slower than testkit.WaitFor on purpose: each check forces a GC in the
// server and dumps its goroutines, and must not become the load.
func pollEvery(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			return cond()
		}
	}
	return true
}

// topStacks keeps the first lines of a goroutine profile (debug=1 groups
// identical stacks, largest group first): enough to see what piled up.
func topStacks(dump string) string {
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(dump))
	for n := 0; sc.Scan() && n < 120; n++ {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	return b.String()
}
