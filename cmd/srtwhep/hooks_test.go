package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/config"
	"github.com/srtwhep/srtwhep/pkg/events"
)

// hookEvent is one POST body as a control plane decodes it.
type hookEvent struct {
	events.Event
	Seq uint64 `json:"seq"`
}

// hookReceiver is a real HTTP server standing in for a control plane; it
// records every event and answers with answer.
type hookReceiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []hookEvent
	bad []string // bodies that were not one event
}

func newHookReceiver(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *hookReceiver {
	t.Helper()
	rc := &hookReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev hookEvent
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		err := dec.Decode(&ev)
		rc.mu.Lock()
		if err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			rc.bad = append(rc.bad, fmt.Sprintf("%s %s: %v", r.Method, r.Header.Get("Content-Type"), err))
		} else {
			rc.got = append(rc.got, ev)
		}
		rc.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *hookReceiver) events() []hookEvent {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hookEvent(nil), rc.got...)
}

// wait returns the first event of kind on path, failing the test if none
// arrives within 20 s.
func (rc *hookReceiver) wait(t *testing.T, kind events.Kind, path string) hookEvent {
	t.Helper()
	var found hookEvent
	testkit.WaitFor(t, 20*time.Second, fmt.Sprintf("a %s event for %s", kind, path), func() bool {
		for _, ev := range rc.events() {
			if ev.Kind == kind && ev.Path == path {
				found = ev
				return true
			}
		}
		return false
	})
	return found
}

// TestHooks: a real ffmpeg publisher and a real pion viewer come and go;
// the control plane hears of each, in order, with the path, the protocol,
// the remote address, the id that pairs a start with its end, and why it
// ended.
func TestHooks(t *testing.T) {
	t.Parallel()
	rc := newHookReceiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	ts := startServer(t, func(c *config.Config) { c.Hooks.URL = rc.URL + "/events" })
	const path = "live/hooks"

	pub := startFFmpeg(t, x264Args("640x360"), ts.srtURL("publish:"+path))
	connected := rc.wait(t, events.PublisherConnected, path)
	var pubRemote string
	for _, p := range ts.ingest.Stats() {
		if p.Path == path && p.Publisher != nil {
			pubRemote = p.Publisher.Remote
		}
	}
	if connected.Protocol != "srt" || connected.Remote != pubRemote || connected.Reason != "" {
		t.Errorf("publisher.connected = %+v, want protocol srt, remote %s, no reason", connected, pubRemote)
	}
	if _, err := strconv.Atoi(connected.ID); err != nil {
		t.Errorf("publisher.connected id %q is not the SRT socket id: %v", connected.ID, err)
	}
	if age := time.Since(connected.Time); age < 0 || age > time.Minute {
		t.Errorf("publisher.connected time %v is not the moment it happened", connected.Time)
	}

	v := dialViewer(t, ts, path)
	opened := rc.wait(t, events.ReaderOpened, path)
	if opened.Protocol != "webrtc" || opened.ID != sessionID(v) || !strings.HasPrefix(opened.Remote, "127.0.0.1:") || opened.Reason != "" {
		t.Errorf("reader.opened = %+v, want protocol webrtc, id %s, a loopback remote, no reason", opened, sessionID(v))
	}
	v.waitUnits(t, 30, 30*time.Second)
	if err := v.Close(); err != nil {
		t.Fatalf("viewer close: %v", err)
	}
	closed := rc.wait(t, events.ReaderClosed, path)
	if closed.Protocol != "webrtc" || closed.ID != opened.ID || closed.Remote != opened.Remote || closed.Reason != "deleted by the client" {
		t.Errorf("reader.closed = %+v, want the opened reader's id and remote, reason \"deleted by the client\"", closed)
	}

	if err := pub.Cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	_ = pub.Wait(t, 10*time.Second) // ffmpeg ends its SRT connection on the way out
	gone := rc.wait(t, events.PublisherDisconnected, path)
	if gone.Protocol != "srt" || gone.ID != connected.ID || gone.Remote != connected.Remote || gone.Reason != "publisher disconnected" {
		t.Errorf("publisher.disconnected = %+v, want the connected publisher's id and remote, reason \"publisher disconnected\"", gone)
	}

	// Exactly these four, in order, numbered without a gap.
	all := rc.events()
	want := []events.Kind{events.PublisherConnected, events.ReaderOpened, events.ReaderClosed, events.PublisherDisconnected}
	if len(all) != len(want) {
		t.Fatalf("receiver got %d events, want %d: %+v", len(all), len(want), all)
	}
	for i, ev := range all {
		if ev.Kind != want[i] || ev.Seq != uint64(i+1) {
			t.Errorf("event %d is %s seq %d, want %s seq %d", i, ev.Kind, ev.Seq, want[i], i+1)
		}
	}
	rc.mu.Lock()
	if len(rc.bad) > 0 {
		t.Errorf("requests that were not one JSON event: %v", rc.bad)
	}
	rc.mu.Unlock()
	if s := ts.hooks.MetricsSample(); s.Sent != 4 || s.Dropped != 0 || s.Failed != 0 {
		t.Errorf("hook counters %+v, want 4 sent", s)
	}
}

// TestHooksDeadReceiver: a receiver that never answers costs the viewers
// nothing: while viewers come and go and their events pile up and are
// dropped, a watching viewer keeps every frame at full rate.
func TestHooksDeadReceiver(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	rc := newHookReceiver(t, func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) }) // runs before rc.Close
	ts := startServer(t, func(c *config.Config) {
		c.Hooks = config.Hooks{URL: rc.URL, Timeout: config.Duration(500 * time.Millisecond), QueueSize: 2}
	})
	const path = "live/deadhook"
	startFFmpeg(t, x264Args("1280x720"), ts.srtURL("publish:"+path))
	ts.waitPublisher(t, path)

	v := dialViewer(t, ts, path)
	for range 3 {
		churn := dialViewer(t, ts, path)
		churn.waitUnits(t, 10, 30*time.Second)
		if err := churn.Close(); err != nil {
			t.Fatalf("viewer close: %v", err)
		}
	}
	// 1 publisher + 4 viewers opened + 3 closed = 8 events: at most one
	// in flight and two queued.
	testkit.WaitFor(t, 10*time.Second, "hook events dropped", func() bool { return ts.hooks.MetricsSample().Dropped > 0 })
	ts.logs.WaitLog(t, 5*time.Second, "component=hooks", "hook receiver is too slow, dropped", "the queue of 2 events is full")
	v.waitUnits(t, v.count()+150, 30*time.Second)
	checkFullRate(t, "viewer", v)
	if s := ts.hooks.MetricsSample(); s.Sent != 0 {
		t.Errorf("hook counters %+v: a receiver that never answers cannot have been sent anything", s)
	}
}
