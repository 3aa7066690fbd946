package whepevents

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/testkit/h264clip"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

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
