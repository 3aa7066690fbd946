package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/config"
)

// livePlaying is the player's status while it plays: "Live · N watching"
// with the server's events, "Playing" without them.
func livePlaying(status string) bool {
	return status == "Playing" || strings.HasPrefix(status, "Live · ")
}

// transcript records a test's events with their time since it started;
// the closing note quotes it.
type transcript struct {
	start time.Time
	mu    sync.Mutex
	lines []string
}

func newTranscript() *transcript { return &transcript{start: time.Now()} }

func (tr *transcript) add(format string, args ...any) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.lines = append(tr.lines, fmt.Sprintf("%7.3fs  ", time.Since(tr.start).Seconds())+fmt.Sprintf(format, args...))
}

func (tr *transcript) log(t *testing.T, title string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	t.Logf("%s:\n%s", title, strings.Join(tr.lines, "\n"))
}

// openEvents reads the SSE Link of v's 201 and opens an event stream for
// every event type.
func openEvents(t *testing.T, v *whepclient.Session) *whepclient.EventStream {
	t.Helper()
	target, _ := whepclient.SSELink(v.SessionURL(), v.Links())
	if target == "" {
		t.Fatalf("no server-sent events Link in the 201: %q", v.Links())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	es, err := whepclient.OpenEvents(ctx, nil, target, []string{"active", "inactive", "reconnect", "viewercount"})
	if err != nil {
		t.Fatalf("open the event stream: %v", err)
	}
	t.Cleanup(es.Close)
	return es
}

// awaitEvent returns the first event for which match is true, adding
// every event read to tr.
func awaitEvent(t *testing.T, es *whepclient.EventStream, tr *transcript, timeout time.Duration, what string, match func(whepclient.Event) bool) whepclient.Event {
	t.Helper()
	ev, err := es.Next(timeout, func(ev whepclient.Event) bool {
		tr.add("event: %s  data: %s", ev.Type, ev.Data)
		return match(ev)
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	return ev
}

func isType(typ string) func(whepclient.Event) bool {
	return func(ev whepclient.Event) bool { return ev.Type == typ }
}

func viewerCount(n int) func(whepclient.Event) bool {
	return func(ev whepclient.Event) bool {
		var d struct{ ViewerCount *int } // field names match case-insensitively; others are ignored
		return ev.Type == "viewercount" && json.Unmarshal(ev.Data, &d) == nil && d.ViewerCount != nil && *d.ViewerCount == n
	}
}

// TestEventsPublisherLifecycle: a real viewer subscribes and sees active;
// the publisher (ffmpeg over SRT) is killed and the viewer is told
// inactive while its session waits out the grace period; a new publisher
// makes it active again once its first IDR has arrived.
func TestEventsPublisherLifecycle(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	tr := newTranscript()
	pub := startFFmpeg(t, x264Args("640x360"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")
	tr.add("publisher 1 streaming")
	v := dialViewer(t, ts, "live/cam1")
	es := openEvents(t, v.Session)
	tr.add("subscribed: %s", es.URL)
	awaitEvent(t, es, tr, 15*time.Second, "active", isType("active"))
	v.waitUnits(t, 30, 15*time.Second)

	frames := ts.framesIn("live/cam1")
	_ = pub.Cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	tr.add("publisher 1 killed (SIGKILL) after %d frames", frames)
	ev := awaitEvent(t, es, tr, 15*time.Second, "inactive", isType("inactive"))
	took := ev.At.Sub(killed)
	tr.add("inactive %v after the kill", took.Round(time.Millisecond))
	if took > 2*time.Second {
		// A figure on a shared machine, reported rather than timed: the
		// server's threshold is 1.5 s without frames.
		t.Logf("inactive came %v after the kill, over the 2 s target (machine load?)", took)
	}

	startFFmpeg(t, x264Args("640x360"), ts.srtURL("publish:live/cam1"))
	tr.add("publisher 2 started")
	awaitEvent(t, es, tr, 20*time.Second, "active", isType("active"))
	tr.add("the session is the same one: %v", ts.whep.Sessions()[0].ID == sessionID(v))
	tr.log(t, "event transcript (publisher killed and restarted)")
}

// TestEventsViewerCount: viewercount follows WHEP viewers and an SRT
// reader joining and leaving the path, at most once a second.
func TestEventsViewerCount(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	tr := newTranscript()
	startFFmpeg(t, x264Args("640x360"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")
	first := dialViewer(t, ts, "live/cam1")
	es := openEvents(t, first.Session)
	awaitEvent(t, es, tr, 15*time.Second, "viewercount 1", viewerCount(1))
	second := dialViewer(t, ts, "live/cam1")
	tr.add("viewer 2 joined")
	awaitEvent(t, es, tr, 15*time.Second, "viewercount 2", viewerCount(2))
	third := dialViewer(t, ts, "live/cam1")
	tr.add("viewer 3 joined")
	awaitEvent(t, es, tr, 15*time.Second, "viewercount 3", viewerCount(3))
	srtReader := startProbe(t, ts, "read:live/cam1", 4)
	tr.add("SRT reader (ffprobe) joined")
	awaitEvent(t, es, tr, 20*time.Second, "viewercount 4", viewerCount(4))
	if p := srtReader(); len(p.Streams) == 0 {
		t.Errorf("the SRT reader read no stream")
	}
	tr.add("SRT reader left")
	awaitEvent(t, es, tr, 15*time.Second, "viewercount 3 after the SRT reader", viewerCount(3))
	_ = third.Close()
	tr.add("viewer 3 left")
	awaitEvent(t, es, tr, 15*time.Second, "viewercount 2", viewerCount(2))
	_ = second.Close()
	tr.add("viewer 2 left")
	ev := awaitEvent(t, es, tr, 15*time.Second, "viewercount 1", viewerCount(1))
	tr.add("last count at %v", ev.At.Sub(tr.start).Round(time.Millisecond))
	tr.log(t, "event transcript (viewers joining and leaving)")
}

// TestEventsSIGTERMReconnect runs the real binary: on SIGTERM its viewer
// is sent reconnect with the configured http.reconnectURL while its
// session still plays, and the session ends only after it.
func TestEventsSIGTERMReconnect(t *testing.T) {
	t.Parallel()
	const reconnectURL = "http://127.0.0.9:8889"
	cfg := binaryConfig(t, func(c *config.Config) {
		c.HTTP.ReconnectURL = reconnectURL
		c.HTTP.DrainTimeout = config.Duration(2 * time.Second)
	})
	srv := testkit.StartServer(t, testkit.BuildBinary(t, "./cmd/srtwhep"), cfg)
	tr := newTranscript()
	testkit.StartFFmpeg(t, append(x264Args("640x360"), "-f", "mpegts", srv.SRTURL("publish:live/cam1"))...)
	srv.WaitLog(t, 15*time.Second, "stream parameters", "path=live/cam1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := whepclient.Dial(ctx, srv.URL("/live/cam1/whep"), whepclient.Options{SettingEngine: testkit.LoopbackOnly})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	if err := v.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 15*time.Second, "media at the viewer", func() bool { return v.Stats().Packets > 0 })
	es := openEvents(t, v)
	awaitEvent(t, es, tr, 15*time.Second, "active", isType("active"))

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		srv.Stop(t) // SIGTERM; fails the test unless the server exits 0 within 5 s
	}()
	tr.add("SIGTERM")
	ev := awaitEvent(t, es, tr, 10*time.Second, "reconnect", isType("reconnect"))
	select {
	case <-v.Done():
		t.Fatalf("the session ended before the reconnect event arrived: %v", v.Err())
	default:
	}
	packets := v.Stats().Packets
	// A draining server takes no new viewers: a load balancer retries
	// the offer elsewhere.
	if code, _, body := request(t, "POST", srv.URL("/live/cam1/whep"), "", "application/sdp", offerSDP(t)); code != 503 || !strings.Contains(body, "draining") {
		t.Errorf("an offer while draining: %d %s, want 503 (draining)", code, body)
	}
	tr.add("an offer while draining: 503")
	var d struct{ URL string }
	if err := json.Unmarshal(ev.Data, &d); err != nil || d.URL != reconnectURL+"/live/cam1/whep" {
		t.Errorf("reconnect data %s, want url %s/live/cam1/whep", ev.Data, reconnectURL)
	}
	select {
	case <-v.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("the session did not end after the drain")
	}
	ended := time.Now()
	tr.add("session ended (%v); %d packets received when reconnect arrived, %d in all", v.Err(), packets, v.Stats().Packets)
	if ended.Before(ev.At) {
		t.Error("the session ended before the reconnect event")
	}
	<-stopped
	tr.add("server exited")
	tr.log(t, "event transcript (SIGTERM drain)")
}
