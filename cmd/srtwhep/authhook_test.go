package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/config"
)

// TestAuthHook: a real HTTP hook on 127.0.0.1 decides. It allows
// publishing to live/hook-ok and watching with token "good"; it refuses
// live/hook-no; for live/hook-slow it answers only after the timeout, which
// must deny.
func TestAuthHook(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []auth.Request
	release := make(chan struct{})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req auth.Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		seen = append(seen, req)
		mu.Unlock()
		switch {
		case req.Path == "live/hook-slow":
			select {
			case <-release:
			case <-r.Context().Done():
			}
			w.WriteHeader(http.StatusOK) // too late to count
		case req.Action == auth.ActionPublish && req.Path == "live/hook-ok",
			req.Action == auth.ActionRead && req.Token == "good":
			w.WriteHeader(http.StatusOK)
		default:
			http.Error(w, "denied", http.StatusForbidden)
		}
	}))
	t.Cleanup(func() {
		close(release)
		hook.Close()
	})
	ts := startServer(t, func(c *config.Config) {
		c.AuthHook = config.AuthHook{URL: hook.URL + "/auth",
			Timeout: config.Duration(300 * time.Millisecond), CacheTTL: config.Duration(10 * time.Second)}
	})

	startFFmpeg(t, x264Args("320x240"), ts.srtURL("publish:live/hook-ok:alice:pw-1"))
	ts.waitPublisher(t, "live/hook-ok")
	mu.Lock()
	first := seen[0]
	mu.Unlock()
	want := auth.Request{Action: auth.ActionPublish, Path: "live/hook-ok", IP: "127.0.0.1", User: "alice", Password: "pw-1"}
	if first != want {
		t.Errorf("hook received %+v, want %+v", first, want)
	}

	for _, tc := range []struct{ path, log string }{
		{"live/hook-no", "403 Forbidden"},
		{"live/hook-slow", "no answer within 300ms"},
	} {
		ts.waitUnthrottled(t)
		p := startFFmpeg(t, x264Args("320x240", "-t", "5"), ts.srtURL("publish:"+tc.path))
		if err := p.Wait(t, 15*time.Second); err == nil {
			t.Errorf("%s: ffmpeg was accepted", tc.path)
		}
		// The hook is asked on the publisher's own goroutine, after the
		// SRT handshake: a refusal closes the connection with the reason.
		line := ts.logs.WaitLog(t, 5*time.Second, "publisher closed", "path="+tc.path)
		if !strings.Contains(line, "authHook") || !strings.Contains(line, tc.log) {
			t.Errorf("%s: rejection should name the hook and %q: %s", tc.path, tc.log, line)
		}
	}

	ts.waitUnthrottled(t)
	if code, h, _ := ts.postOffer(t, "live/hook-ok", "bad"); code != http.StatusUnauthorized || h.Get("WWW-Authenticate") == "" {
		t.Errorf("viewer the hook refuses: %d, want 401 with WWW-Authenticate", code)
	}
	ts.waitUnthrottled(t)
	v := dialViewerToken(t, ts, "live/hook-ok", "good")
	testkit.WaitFor(t, 10*time.Second, "media for the viewer the hook allowed", func() bool { return v.Stats().Frames > 10 })

	// The answer is cached: the same viewer again does not reach the hook.
	mu.Lock()
	calls := len(seen)
	mu.Unlock()
	dialViewerToken(t, ts, "live/hook-ok", "good")
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != calls {
		t.Errorf("hook asked again within cacheTTL (%d → %d calls)", calls, len(seen))
	}
}

// TestSlowHookStallsOnlyItsPublisher: the hook takes 1.5 s to allow each of
// four publishers that connect at once, while publisher A is already
// streaming. libsrt's receive thread serves every SRT connection of the
// port, so a hook asked from the listen callback would stall A's packets;
// asked on each publisher's own goroutine it delays only that publisher.
// A's viewer must keep at least 25 of its 30 fps in every second.
//
// Not parallel: it counts frames per second of wall time, which other
// tests' load would lower.
func TestSlowHookStallsOnlyItsPublisher(t *testing.T) {
	const slow = 1500 * time.Millisecond
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req auth.Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if strings.HasPrefix(req.Path, "live/b") {
			select {
			case <-time.After(slow):
			case <-r.Context().Done():
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(hook.Close)
	ts := startServer(t, func(c *config.Config) {
		c.AuthHook = config.AuthHook{URL: hook.URL, Timeout: config.Duration(3 * time.Second)}
	})

	startFFmpeg(t, x264Args("320x240"), ts.srtURL("publish:live/a"))
	ts.waitPublisher(t, "live/a")
	v := dialViewer(t, ts, "live/a")
	v.waitUnits(t, 60, 15*time.Second)

	start := time.Now()
	bs := []string{"live/b1", "live/b2", "live/b3", "live/b4"}
	for _, b := range bs {
		startFFmpeg(t, x264Args("320x240"), ts.srtURL("publish:"+b))
	}
	for _, b := range bs {
		ts.waitPublisher(t, b)
	}
	if d := time.Since(start); d < slow {
		t.Fatalf("publishers streamed after %v, before the hook answered (%v): the hook was not asked", d, slow)
	}
	// Every second from the B publishers' handshakes until all four
	// stream, the time any hook stall would have hit A.
	windows := int(time.Since(start)/time.Second) + 1
	for i := range windows {
		from := start.Add(time.Duration(i) * time.Second)
		to := from.Add(time.Second)
		testkit.WaitFor(t, 5*time.Second, "the viewer to receive past the window", func() bool {
			aus := v.units()
			return aus[len(aus)-1].Received.After(to)
		})
		n := 0
		for _, au := range v.units() {
			if !au.Received.Before(from) && au.Received.Before(to) {
				n++
			}
		}
		t.Logf("A's viewer: %d frames in [%v, %v)", n, from.Sub(start), to.Sub(start))
		if n < 25 {
			t.Errorf("A's viewer got %d frames between %v and %v after the slow publishers connected, want ≥ 25",
				n, from.Sub(start).Round(time.Millisecond), to.Sub(start).Round(time.Millisecond))
		}
	}
}
