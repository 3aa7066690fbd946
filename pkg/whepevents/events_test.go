package whepevents

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/testkit/h264clip"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/admission"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/httpproblem"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/mediaplane"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/refusallog"
	"github.com/srtwhep/srtwhep/pkg/whep"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is a real hub with a live path, a WHEP server on it with the
// event streams mounted as cmd/srtwhep mounts them, and real pion viewers.
type fixture struct {
	h    *hub.Hub
	pub  *hub.Publisher
	srv  *whep.Server
	ev   *Streams
	url  string
	clip []*av.AccessUnit
}

func newFixture(t *testing.T, mod func(*Config)) *fixture {
	t.Helper()
	f := &fixture{h: hub.New(hub.Config{}), clip: h264clip.Make(t, 30, 30)}
	var err error
	if f.pub, err = f.h.Publish("live/cam1", "127.0.0.1:5000"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.pub.Close() })
	var refused func(r *http.Request, path string, status int, slug, detail string)
	cfg := Config{
		State:   f.h.State,
		Session: func(path, id string) bool { return f.srv.HasSession(path, id) },
		Refused: func(r *http.Request, path string, status int, slug, detail string) {
			refused(r, path, status, slug, detail)
		},
		Logger: testkit.TestLogger(t, slog.LevelInfo),
	}
	if mod != nil {
		mod(&cfg)
	}
	if f.ev, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	pl, err := mediaplane.NewPlane(plane.Config{UDPListen: "127.0.0.1:0", IncludeLoopback: true, Logger: cfg.Logger})
	if err != nil {
		t.Fatal(err)
	}
	f.srv, err = whep.New(whep.Config{Source: whep.SourceFuncs[*hub.Reader]{Add: f.h.AddPendingReader, AddTranscoded: f.h.AddPendingTranscodedReader}, Plane: pl, Extensions: []whep.Extension{f.ev}, Logger: cfg.Logger,
		Limits: admission.ViewerLimits{OfferRate: 1 << 20, OfferBurst: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	l := refusallog.New(cfg.Logger, "event stream refused")
	refused = func(r *http.Request, path string, status int, slug, detail string) {
		l.Refused(r, path, status, slug, detail, "")
	}
	ctx, cancel := context.WithCancel(context.Background())
	srvDone, evDone := make(chan error, 1), make(chan error, 1)
	go func() { srvDone <- f.srv.Run(ctx) }()
	go func() { evDone <- f.ev.Run(ctx) }()
	<-f.srv.Ready()
	hs := httptest.NewServer(f.srv.Handler(f.ev.Handler(http.NotFoundHandler())))
	f.url = hs.URL
	t.Cleanup(func() {
		hs.Close()
		cancel()
		if err := <-srvDone; err != nil {
			t.Errorf("whep Run: %v", err)
		}
		<-evDone
	})
	return f
}

func (f *fixture) dial(t *testing.T) *whepclient.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v, err := whepclient.Dial(ctx, f.url+"/live/cam1/whep", whepclient.Options{SettingEngine: testkit.LoopbackOnly})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	return v
}

// nextEvent returns the next event of one of the types, skipping others.
func nextEvent(t *testing.T, es *whepclient.EventStream, timeout time.Duration, types ...string) whepclient.Event {
	t.Helper()
	ev, err := es.Next(timeout, func(ev whepclient.Event) bool { return slices.Contains(types, ev.Type) })
	if err != nil {
		t.Fatalf("waiting for %v: %v", types, err)
	}
	return ev
}

func problemSlug(t *testing.T, body string) string {
	t.Helper()
	var p httpproblem.Problem
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("not a problem body: %q", body)
	}
	return strings.TrimPrefix(p.Type, httpproblem.TypeBase)
}

// TestSSEContract walks the extension's HTTP contract against a real
// viewer's session: the Link of the 201, POST with and without an event
// list, GET as text/event-stream with active and viewercount first, the
// per-session bound, DELETE, 404 after it, CORS, and the streams ending
// with their session.
func TestSSEContract(t *testing.T) {
	f := newFixture(t, nil)
	h264clip.Feed(t, f.pub, f.clip)
	v := f.dial(t)

	target, events := whepclient.SSELink(v.SessionURL(), v.Links())
	if want := v.SessionURL() + "/sse"; target != want {
		t.Fatalf("SSE Link target %q, want %q (links %q)", target, want, v.Links())
	}
	if got := strings.Join(events, ","); got != "active,inactive,reconnect,viewercount" {
		t.Errorf("Link events=%q", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The viewer counts once its ICE has started: an answered offer alone
	// is no viewer (claimReader).
	if err := v.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	all, err := whepclient.OpenEvents(ctx, nil, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	ev := nextEvent(t, all, 10*time.Second, "active", "inactive", "viewercount")
	if ev.Type != "active" || string(ev.Data) != "{}" {
		t.Errorf("first event %s %s, want active {}", ev.Type, ev.Data)
	}
	ev = nextEvent(t, all, 10*time.Second, "viewercount")
	if string(ev.Data) != `{"viewercount":1}` {
		t.Errorf("viewercount data %s", ev.Data)
	}
	// A player that also asks for events this server does not send.
	some, err := whepclient.OpenEvents(ctx, nil, target, []string{"active", "layers", "scte35"})
	if err != nil {
		t.Fatalf("POST with unknown event names: %v", err)
	}
	if ev := nextEvent(t, some, 10*time.Second, "active", "viewercount"); ev.Type != "active" {
		t.Errorf("a stream for active only got %s", ev.Type)
	}

	resp, body := testkit.Do(t, http.MethodPost, target, "application/json", `["active"]`, nil)
	if resp.StatusCode != http.StatusTooManyRequests || problemSlug(t, body) != probEventStreams || resp.Header.Get("Retry-After") == "" {
		t.Errorf("third stream of a session: %d %s Retry-After %q, want 429 %s", resp.StatusCode, body, resp.Header.Get("Retry-After"), probEventStreams)
	}
	resp, body = testkit.Do(t, http.MethodPost, target, "application/json", `{"active":true}`, nil)
	if resp.StatusCode != http.StatusBadRequest || problemSlug(t, body) != probBadEventList {
		t.Errorf("object body: %d %s, want 400 %s", resp.StatusCode, body, probBadEventList)
	}
	resp, _ = testkit.Do(t, http.MethodOptions, target, "", "", nil)
	if resp.StatusCode != http.StatusNoContent || !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") ||
		resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("preflight of the SSE URL: %d %v", resp.StatusCode, resp.Header)
	}
	resp, _ = testkit.Do(t, http.MethodOptions, some.URL, "", "", nil)
	if !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "DELETE") {
		t.Errorf("preflight of a stream: %v", resp.Header)
	}

	if code, err := some.Delete(ctx); err != nil || code != http.StatusOK {
		t.Fatalf("DELETE stream: %d %v", code, err)
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		resp, body = testkit.Do(t, m, some.URL, "", "", nil)
		if resp.StatusCode != http.StatusNotFound || problemSlug(t, body) != probNoEventStream {
			t.Errorf("%s of a deleted stream: %d %s, want 404 %s", m, resp.StatusCode, body, probNoEventStream)
		}
	}
	resp, body = testkit.Do(t, http.MethodGet, target+"/0123", "", "", nil)
	if resp.StatusCode != http.StatusNotFound || problemSlug(t, body) != probNoEventStream {
		t.Errorf("GET of an unknown stream: %d %s", resp.StatusCode, body)
	}

	// The stream ends with its WHEP session.
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "event stream ended with its session", func() bool {
		select {
		case _, ok := <-all.Events:
			return !ok
		default:
			return false
		}
	})
	resp, body = testkit.Do(t, http.MethodPost, target, "", "", nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST to the SSE URL of an ended session: %d %s", resp.StatusCode, body)
	}
	if n := f.ev.Stats().Streams; n != 0 {
		t.Errorf("%d event streams left after the session ended", n)
	}
}

// TestSSEActiveInactive: a publisher that stops writing (its encoder died,
// its SRT connection still open) is inactive once its last frame is
// staleAfter old; frames again make it active.
func TestSSEActiveInactive(t *testing.T) {
	f := newFixture(t, nil)
	stop := h264clip.Feed(t, f.pub, f.clip)
	v := f.dial(t)
	target, _ := whepclient.SSELink(v.SessionURL(), v.Links())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	es, err := whepclient.OpenEvents(ctx, nil, target, []string{"active", "inactive"})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	nextEvent(t, es, 10*time.Second, "active")
	stop()
	stopped := time.Now()
	ev := nextEvent(t, es, 15*time.Second, "active", "inactive")
	if ev.Type != "inactive" {
		t.Fatalf("after the frames stopped: %s", ev.Type)
	}
	t.Logf("inactive %v after the last frame (threshold %v, poll %v)", ev.At.Sub(stopped).Round(time.Millisecond), staleAfter, pollEvery)
	h264clip.Feed(t, f.pub, f.clip)
	if ev := nextEvent(t, es, 15*time.Second, "active", "inactive"); ev.Type != "active" {
		t.Fatalf("after the frames resumed: %s", ev.Type)
	}
}

// TestSSEFloodBounded: event streams are bounded in total; a flood of
// POSTs beyond it is refused with 503 + Retry-After, and the streams
// already open keep working.
func TestSSEFloodBounded(t *testing.T) {
	logs := &testkit.LogBuffer{}
	f := newFixture(t, func(c *Config) { c.MaxStreams = 3; c.Logger = logs.Logger(slog.LevelInfo) })
	h264clip.Feed(t, f.pub, f.clip)
	a, b := f.dial(t), f.dial(t)
	ta, _ := whepclient.SSELink(a.SessionURL(), a.Links())
	tb, _ := whepclient.SSELink(b.SessionURL(), b.Links())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var open []*whepclient.EventStream
	for _, target := range []string{ta, ta, tb} {
		es, err := whepclient.OpenEvents(ctx, nil, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer es.Close()
		open = append(open, es)
	}
	const flood = 200
	refused := map[int]int{}
	began := time.Now()
	for range flood {
		resp, body := testkit.Do(t, http.MethodPost, tb, "", "", nil)
		refused[resp.StatusCode]++
		if resp.StatusCode == http.StatusServiceUnavailable && (problemSlug(t, body) != probEventStreams || resp.Header.Get("Retry-After") == "") {
			t.Fatalf("refusal: %s", body)
		}
	}
	took := time.Since(began)
	lines := len(logs.Lines("event stream refused", "reason=event-stream-limit"))
	t.Logf("flood of %d POSTs past the limit of 3 in %v: %v; %d log lines", flood, took.Round(time.Millisecond), refused, lines)
	// One line a second at most, the first at once.
	if lines < 1 || lines > int(took/time.Second)+1 {
		t.Errorf("%d refusal lines in %v", lines, took)
	}
	if refused[http.StatusServiceUnavailable] != flood {
		t.Errorf("refused %v, want all %d with 503", refused, flood)
	}
	if n := f.ev.Stats().Streams; n != 3 {
		t.Errorf("%d streams open, want 3", n)
	}
	for i, es := range open {
		if ev := nextEvent(t, es, 10*time.Second, "active"); ev.Type != "active" {
			t.Errorf("stream %d: %s", i, ev.Type)
		}
	}
}

// TestSSEQueueBound: a stream whose reader never reads holds at most
// queueMax events, one viewercount (the latest) among them, and pushing
// never blocks.
func TestSSEQueueBound(t *testing.T) {
	es := newEventStream("s", "sess", "live/a", allEvents)
	for i := range 10 * queueMax {
		es.push(viewerCountEvent(i))
		if i%3 == 0 {
			es.push(newEvent(evActive, struct{}{}))
		}
	}
	got := es.take(nil)
	counts := 0
	for _, ev := range got {
		if ev.typ == evViewerCount {
			counts++
			if want := fmt.Sprintf(`{"viewercount":%d}`, 10*queueMax-1); string(ev.data) != want {
				t.Errorf("queued viewercount %s, want the latest %s", ev.data, want)
			}
		}
	}
	t.Logf("queue after %d viewercounts and %d actives: %d events, %d dropped", 10*queueMax, (10*queueMax+2)/3, len(got), es.dropped)
	if len(got) > queueMax || counts != 1 || es.dropped == 0 {
		t.Errorf("queue %d (max %d), %d viewercounts, %d dropped", len(got), queueMax, counts, es.dropped)
	}
	// Types the stream did not ask for never enter it.
	only := newEventStream("s2", "sess", "live/a", eventBit(evReconnect))
	only.push(newEvent(evActive, struct{}{}))
	if n := len(only.take(nil)); n != 0 {
		t.Errorf("an unwanted type was queued (%d)", n)
	}
}

// TestSSERawStream reads the wire format with a client that knows only
// event: and data: and decodes the data into a struct without the fields
// it does not know: the retry: line, the heartbeat comments and any
// field a later server adds are skipped, and the events still arrive.
func TestSSERawStream(t *testing.T) {
	old := heartbeatEvery
	heartbeatEvery = 200 * time.Millisecond
	t.Cleanup(func() { heartbeatEvery = old })
	f := newFixture(t, nil)
	h264clip.Feed(t, f.pub, f.clip)
	v := f.dial(t)
	target, _ := whepclient.SSELink(v.SessionURL(), v.Links())
	resp, _ := testkit.Do(t, http.MethodPost, target, "", "", nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST without a body: %d", resp.StatusCode)
	}
	loc := resp.Header.Get("Location")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.url+loc, nil)
	gr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer gr.Body.Close()
	if ct := gr.Header.Get("Content-Type"); ct != "text/event-stream" || gr.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("GET: Content-Type %q, headers %v", ct, gr.Header)
	}
	sc := bufio.NewScanner(gr.Body)
	var raw []string
	var typ string
	var got []string
	heartbeats := 0
	for len(raw) < 200 && sc.Scan() {
		line := sc.Text()
		raw = append(raw, line)
		switch {
		case strings.HasPrefix(line, "event: "):
			typ = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d struct {
				ViewerCount *int `json:"viewercount"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("data line %q: %v", line, err)
			}
			got = append(got, typ)
		case strings.HasPrefix(line, ":"):
			heartbeats++
		}
		if heartbeats >= 2 && len(got) >= 2 {
			break
		}
	}
	t.Logf("raw stream:\n%s", strings.Join(raw, "\n"))
	if len(got) < 2 || got[0] != evActive || got[1] != evViewerCount || heartbeats < 2 || raw[0] != "retry: 1000" {
		t.Errorf("events %v, %d heartbeats, first line %q", got, heartbeats, raw[0])
	}
}

// TestSSEGetTakesOver: an EventSource that reconnects before the server
// noticed its old connection died gets the stream; the old GET ends.
func TestSSEGetTakesOver(t *testing.T) {
	f := newFixture(t, nil)
	h264clip.Feed(t, f.pub, f.clip)
	v := f.dial(t)
	target, _ := whepclient.SSELink(v.SessionURL(), v.Links())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first, err := whepclient.OpenEvents(ctx, nil, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	nextEvent(t, first, 10*time.Second, evActive)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, first.URL, nil)
	second, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Body.Close()
	if second.StatusCode != http.StatusOK {
		t.Fatalf("second GET: %d", second.StatusCode)
	}
	if _, err := first.Next(10*time.Second, func(whepclient.Event) bool { return false }); err == nil || !strings.Contains(err.Error(), "ended") {
		t.Errorf("the first GET did not end: %v", err)
	}
}
