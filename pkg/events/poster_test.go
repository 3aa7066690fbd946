package events

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/metrics"
)

func TestMain(m *testing.M) { testkit.Main(m, nil, nil) }

// receiver is a real HTTP server that records every POST body and answers
// with whatever answer returns.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
	ctypes []string
	got    chan struct{} // one send per request, when it can be taken
}

func newReceiver(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{got: make(chan struct{}, 100_000)}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.bodies = append(rc.bodies, string(body))
		rc.ctypes = append(rc.ctypes, r.Method+" "+r.Header.Get("Content-Type"))
		rc.mu.Unlock()
		select {
		case rc.got <- struct{}{}:
		default:
		}
		answer(w, r)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) received() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.bodies...)
}

// seqs decodes the seq of each body.
func (rc *receiver) seqs(t *testing.T) []uint64 {
	t.Helper()
	var out []uint64
	for _, b := range rc.received() {
		var v struct{ Seq uint64 }
		if err := json.Unmarshal([]byte(b), &v); err != nil {
			t.Fatalf("body %q: %v", b, err)
		}
		out = append(out, v.Seq)
	}
	return out
}

// run starts p.Run and returns a stop func that cancels it and waits for
// it to return.
func run(t *testing.T, p *Poster) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Run did not return within 30 s of cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func newPoster(t *testing.T, cfg PosterConfig) (*Poster, *testkit.LogBuffer) {
	t.Helper()
	logs := &testkit.LogBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	p, err := NewPoster(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, logs
}

func ok(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }

// TestPosterOrderAndJSON: every event arrives once, in the order emitted,
// as the documented JSON object.
func TestPosterOrderAndJSON(t *testing.T) {
	rc := newReceiver(t, ok)
	p, _ := newPoster(t, PosterConfig{URL: rc.URL + "/events"})
	stop := run(t, p)

	at := time.Date(2026, 1, 2, 15, 4, 5, 123e6, time.UTC)
	kinds := []Kind{PublisherConnected, ReaderOpened, ReaderClosed, PublisherDisconnected, SourceUp, SourceDown}
	const n = 60
	for i := range n {
		e := Event{Kind: kinds[i%len(kinds)], Time: at, Path: "live/cam" + strconv.Itoa(i), Protocol: "webrtc",
			ID: "id" + strconv.Itoa(i), Remote: "127.0.0.1:5000"}
		if i%2 == 1 {
			e.Reason = "deleted by the client"
		}
		p.Emit(e)
	}
	testkit.WaitFor(t, 20*time.Second, "60 events sent", func() bool { return p.MetricsSample().Sent == n })
	stop()

	bodies := rc.received()
	if len(bodies) != n {
		t.Fatalf("receiver got %d requests, want %d", len(bodies), n)
	}
	want0 := `{"event":"publisher.connected","time":"2026-01-02T15:04:05.123Z","path":"live/cam0","protocol":"webrtc","id":"id0","remote":"127.0.0.1:5000","seq":1}`
	if bodies[0] != want0 {
		t.Errorf("first body:\n got %s\nwant %s", bodies[0], want0)
	}
	want1 := `{"event":"reader.opened","time":"2026-01-02T15:04:05.123Z","path":"live/cam1","protocol":"webrtc","id":"id1","remote":"127.0.0.1:5000","reason":"deleted by the client","seq":2}`
	if bodies[1] != want1 {
		t.Errorf("second body:\n got %s\nwant %s", bodies[1], want1)
	}
	for i, b := range bodies {
		var got posted
		if err := json.Unmarshal([]byte(b), &got); err != nil {
			t.Fatalf("body %d %q: %v", i, b, err)
		}
		if got.Seq != uint64(i+1) || got.Path != "live/cam"+strconv.Itoa(i) || got.Kind != kinds[i%len(kinds)] {
			t.Errorf("body %d out of order or wrong: %s", i, b)
		}
	}
	for i, ct := range rc.ctypes {
		if ct != "POST application/json" {
			t.Errorf("request %d: %q, want POST with Content-Type application/json", i, ct)
			break
		}
	}
	if got, want := p.MetricsSample(), (metrics.HookSample{Sent: n}); got != want {
		t.Errorf("counters %+v, want %+v", got, want)
	}
}

// TestPosterHungReceiver: a receiver that does not answer does not block
// Emit; what does not fit in the queue is dropped, counted and logged at
// most once a second.
func TestPosterHungReceiver(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
			w.WriteHeader(http.StatusOK)
		case <-r.Context().Done():
		}
	})
	const queue = 16
	// The POST must outlast the burst, however slow the machine.
	p, logs := newPoster(t, PosterConfig{URL: rc.URL, QueueSize: queue, Timeout: time.Hour})
	stop := run(t, p)

	p.Emit(Event{Kind: ReaderOpened, Path: "live/a"})
	<-rc.got // Run is now stuck in the first POST

	start := time.Now()
	const burst = 10_000
	for i := range burst {
		p.Emit(Event{Kind: ReaderClosed, Path: "live/a", ID: strconv.Itoa(i)})
	}
	elapsed := time.Since(start)
	if got := p.MetricsSample(); got.Dropped != burst-queue || got.Sent != 0 || got.Failed != 0 {
		t.Fatalf("after the burst: %+v, want %d dropped and nothing sent or failed", got, burst-queue)
	}

	close(release)
	testkit.WaitFor(t, 20*time.Second, "the queue sent", func() bool { return p.MetricsSample().Sent == 1+queue })
	stop()
	if got, want := p.MetricsSample(), (metrics.HookSample{Sent: 1 + queue, Dropped: burst - queue}); got != want {
		t.Errorf("after Run: %+v, want %+v", got, want)
	}
	// What went out is the first event and the oldest of the burst, in
	// order: a full queue drops the newest.
	seqs := rc.seqs(t)
	for i, s := range seqs {
		if s != uint64(i+1) {
			t.Fatalf("receiver saw seqs %v, want 1 to %d", seqs, 1+queue)
		}
	}

	dropLine := regexp.MustCompile(`msg="hook receiver is too slow, dropped (\d+) events" url=\S+ reason="the queue of 16 events is full: the receiver answers slower than events arrive"`)
	lines := logs.Lines("too slow")
	total := 0
	for _, l := range lines {
		m := dropLine.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("unexpected drop line: %s", l)
			continue
		}
		n, _ := strconv.Atoi(m[1])
		total += n
	}
	if total != burst-queue {
		t.Errorf("drop lines sum to %d, want %d:\n%s", total, burst-queue, logs.String())
	}
	// One line a second at most: the first drop is logged at once, the
	// rest in one line per second of the burst, plus the summary at
	// shutdown.
	if maxLines := int(elapsed/time.Second) + 2; len(lines) > maxLines {
		t.Errorf("%d drop lines for a burst of %v, want at most %d", len(lines), elapsed, maxLines)
	}
}

// TestPosterShutdownHungReceiver: at shutdown the POST in flight to a
// receiver that does not answer runs out its Timeout, the queue gets one
// Timeout more, the rest is dropped and Run returns.
func TestPosterShutdownHungReceiver(t *testing.T) {
	rc := newReceiver(t, func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	p, logs := newPoster(t, PosterConfig{URL: rc.URL, Timeout: 300 * time.Millisecond, Retries: -1})
	stop := run(t, p)
	p.Emit(Event{Kind: ReaderOpened, Path: "live/a"})
	<-rc.got
	for range 3 {
		p.Emit(Event{Kind: ReaderClosed, Path: "live/a"})
	}
	stop()
	// On a slow machine a POST may time out before the cancel, so only
	// the sums are exact: nothing was answered, and every event is either
	// failed (tried) or dropped (never tried).
	got := p.MetricsSample()
	if got.Sent != 0 || got.Failed < 1 || got.Failed+got.Dropped != 4 {
		t.Errorf("after Run: %+v, want nothing sent, 4 failed or dropped, at least one failed", got)
	}
	logs.WaitLog(t, time.Second, "hook receiver failed", "attempts=1", "no answer within 300ms")
	if got.Dropped > 0 {
		logs.WaitLog(t, time.Second, fmt.Sprintf("hook receiver: %d events not sent before the shutdown deadline", got.Dropped))
	}
}

// TestPosterRetries: failures a retry can cure are retried a bounded
// number of times with back-off; others are not; the status is logged.
func TestPosterRetries(t *testing.T) {
	cases := []struct {
		name     string
		statuses []int // answers in turn; the last one repeats
		requests int
		want     metrics.HookSample
		log      string
	}{
		{"500 always", []int{500}, 3, metrics.HookSample{Failed: 1}, `attempts=3 err="the receiver answered 500 Internal Server Error"`},
		{"503 then 200", []int{503, 503, 200}, 3, metrics.HookSample{Sent: 1}, ""},
		{"429 then 204", []int{429, 204}, 2, metrics.HookSample{Sent: 1}, ""},
		{"404 is not retried", []int{404}, 1, metrics.HookSample{Failed: 1}, `attempts=1 err="the receiver answered 404 Not Found, which a retry would not change; check hooks.url and the receiver"`},
		{"redirect is not followed", []int{302}, 1, metrics.HookSample{Failed: 1}, `the receiver answered 302 Found`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
				mu.Lock()
				st := tc.statuses[min(calls, len(tc.statuses)-1)]
				calls++
				mu.Unlock()
				if st == http.StatusFound {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(st)
			})
			p, logs := newPoster(t, PosterConfig{URL: rc.URL, Retries: 2, Backoff: 5 * time.Millisecond})
			stop := run(t, p)
			p.Emit(Event{Kind: PublisherConnected, Path: "live/r"})
			testkit.WaitFor(t, 20*time.Second, "the event's fate", func() bool {
				s := p.MetricsSample()
				return s.Sent+s.Failed == 1
			})
			stop()
			if got := p.MetricsSample(); got != tc.want {
				t.Errorf("counters %+v, want %+v", got, tc.want)
			}
			if seqs := rc.seqs(t); len(seqs) != tc.requests {
				t.Errorf("receiver got %d requests (seqs %v), want %d", len(seqs), seqs, tc.requests)
			}
			if tc.log != "" {
				logs.WaitLog(t, time.Second, "hook receiver failed, 1 events not delivered", "event=publisher.connected", "path=live/r", tc.log)
			}
		})
	}
}

// TestPosterDeadReceiverFailuresLogOncePerSecond: a receiver that refuses
// connections fails every event at once; the log says so in one line a
// second, not one per event.
func TestPosterDeadReceiverFailuresLogOncePerSecond(t *testing.T) {
	rc := newReceiver(t, ok)
	url := rc.URL
	rc.Close() // nothing listens there any more
	p, logs := newPoster(t, PosterConfig{URL: url, Retries: -1})
	stop := run(t, p)
	start := time.Now()
	const n = 200
	for i := range n {
		p.Emit(Event{Kind: ReaderOpened, Path: "live/d", ID: strconv.Itoa(i)})
	}
	testkit.WaitFor(t, 30*time.Second, "every event failed", func() bool { return p.MetricsSample().Failed == n })
	elapsed := time.Since(start)
	stop()
	re := regexp.MustCompile(`hook receiver failed, (\d+) events not delivered`)
	total, lines := 0, logs.Lines("hook receiver failed")
	for _, l := range lines {
		if m := re.FindStringSubmatch(l); m != nil {
			k, _ := strconv.Atoi(m[1])
			total += k
		}
	}
	if total != n {
		t.Errorf("failure lines sum to %d, want %d:\n%s", total, n, logs.String())
	}
	if maxLines := int(elapsed/time.Second) + 2; len(lines) > maxLines {
		t.Errorf("%d failure lines in %v, want at most %d", len(lines), elapsed, maxLines)
	}
	if !regexp.MustCompile(`connection refused`).MatchString(logs.String()) {
		t.Errorf("the failure line should say why:\n%s", logs.String())
	}
}

// TestPosterShutdown: Run flushes what is queued when ctx ends, then
// returns; later events are dropped and counted; the goroutines it used
// are gone (goleak in TestMain).
func TestPosterShutdown(t *testing.T) {
	rc := newReceiver(t, ok)
	p, logs := newPoster(t, PosterConfig{URL: rc.URL})
	for i := range 5 {
		p.Emit(Event{Kind: SourceUp, Path: fmt.Sprintf("live/%d", i)})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if seqs := rc.seqs(t); len(seqs) != 5 || seqs[0] != 1 || seqs[4] != 5 {
		t.Errorf("flush sent seqs %v, want 1 to 5", seqs)
	}
	p.Emit(Event{Kind: SourceDown, Path: "live/late"})
	if got, want := p.MetricsSample(), (metrics.HookSample{Sent: 5, Dropped: 1}); got != want {
		t.Errorf("counters %+v, want %+v", got, want)
	}
	logs.WaitLog(t, time.Second, "dropped 1 events", "the hook sender has stopped")
	if err := p.Run(context.Background()); err == nil {
		t.Error("a second Run returned nil, want an error")
	}
}

func TestNewPosterRefusesBadURLs(t *testing.T) {
	for _, u := range []string{"", "ftp://x.example.org/e", "http:///events", "http://[::1", "events.example.org/e"} {
		if _, err := NewPoster(PosterConfig{URL: u}); err == nil {
			t.Errorf("NewPoster(%q) succeeded, want an error", u)
		}
	}
	var p *Poster
	if p.Func() != nil || p.MetricsSource() != nil {
		t.Error("a nil Poster must give a nil Func and a nil metrics source")
	}
}
