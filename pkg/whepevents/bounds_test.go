package whepevents

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/testkit/h264clip"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

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
