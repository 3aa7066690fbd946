package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// pagePoller returns a func that reads the player's window.srtwhepStats()
// into T, whose fields pick what a test needs of it.
func pagePoller[T any](t *testing.T, ctx context.Context) func() T {
	return func() T {
		t.Helper()
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		s, err := chromedp.Run(pctx, chromedp.Evaluate[T](`window.srtwhepStats()`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("window.srtwhepStats(): %v", err)
		}
		return s
	}
}

// TestBrowserReconnectMoves plays the built-in player in headless Chromium
// from server A, whose http.reconnectURL is server B (each with its own
// publisher), and sends A SIGTERM: the page gets reconnect, opens its
// session on B while A's still plays, swaps the video element's stream at
// B's first frame and ends A's session, so the picture never stops for
// long. The longest gap between frames the page presented around the move
// is the figure (the closing note quotes it).
//
// Not parallel: headless Chromium needs the machine to itself.
func TestBrowserReconnectMoves(t *testing.T) {
	b := browserNetns(t, "10.216.0")
	ctx, srvNS := b.ctx, b.srvNS
	srvNS.ip(t, "addr", "add", "10.216.0.3/24", "dev", "s0")
	bin := testkit.BuildBinary(t, "./cmd/srtwhep")
	// Two servers share the namespace: each its own SRT port and API port.
	serverYAML := func(ip string, srtPort int, http string) string {
		return browserServerYAML(ip, srtPort, http, "api:\n  listen: \"127.0.0.1:0\"\n")
	}
	// B is stopped by the test's end with the page on it: no drain.
	srvB := serverInNetns(t, bin, srvNS, serverYAML("10.216.0.3", 8891, "  drainTimeout: 0s\n"))
	// A's drain ends as soon as the page has moved; 4 s keeps its exit
	// within the 5 s Stop allows even if the move failed.
	srvA := serverInNetns(t, bin, srvNS, serverYAML("10.216.0.1", 8890,
		"  reconnectURL: http://10.216.0.3:8889\n  drainTimeout: 4s\n"))
	publishInNetns(t, srvNS, srvA, "live/cam1")
	publishInNetns(t, srvNS, srvB, "live/cam1")

	if err := chromedp.Do(ctx, chromedp.Navigate("http://10.216.0.1:8889/live/cam1")); err != nil {
		t.Fatalf("open the player page: %v", err)
	}
	type pageState struct {
		State         string  `json:"state"`
		Status        string  `json:"status"`
		Events        bool    `json:"events"`
		Session       *string `json:"session"`
		FramesDecoded int     `json:"framesDecoded"`
		VideoWidth    int     `json:"videoWidth"`
	}
	poll := pagePoller[pageState](t, ctx)
	on := func(st pageState, host string) bool {
		return st.Session != nil && strings.HasPrefix(*st.Session, "http://"+host+":8889/")
	}
	var st pageState
	// The status reads "Playing" until the first viewercount event: the
	// page plays before its event stream has said anything.
	testkit.WaitFor(t, 20*time.Second, "the page to play from A and show its event stream's \"Live · N watching\"", func() bool {
		st = poll()
		return on(st, "10.216.0.1") && st.Events && st.State == "playing" && st.FramesDecoded > 30 &&
			strings.HasPrefix(st.Status, "Live · ")
	})
	t.Logf("playing from A: %q", st.Status)
	// Every frame the page's video element presents, and every status it
	// shows, with the page's clock.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
  const v = document.getElementById("v"), s = document.getElementById("status");
  window.__frames = [];
  window.__status = [[performance.now(), s.textContent]];
  // A new srcObject cancels pending frame callbacks: re-arm on loadstart.
  let armed = 0;
  const arm = () => {
    const me = ++armed;
    const f = () => { if (me !== armed) return; window.__frames.push(performance.now()); v.requestVideoFrameCallback(f); };
    v.requestVideoFrameCallback(f);
  };
  arm();
  v.addEventListener("loadstart", arm);
  new MutationObserver(() => window.__status.push([performance.now(), s.textContent]))
    .observe(s, { childList: true, characterData: true, subtree: true });
  return true;
})()`)); err != nil {
		t.Fatalf("install the frame recorder: %v", err)
	}
	sigAt, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.now()`))
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		srvA.Stop(t) // SIGTERM; fails the test unless A exits 0 within 5 s
	}()
	testkit.WaitFor(t, 15*time.Second, "the page to play from B", func() bool {
		st = poll()
		return on(st, "10.216.0.3") && st.State == "playing"
	})
	// B's first frames are its cached GOP, decoded in a burst: the
	// recording goes on for 3 s of B's live frames.
	testkit.WaitFor(t, 15*time.Second, "3 s of frames presented after the move", func() bool {
		span, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`window.__frames.length ? window.__frames[window.__frames.length-1] : 0`))
		return err == nil && span-sigAt > 4000
	})
	st = poll()
	<-stopped

	type record struct {
		Frames []float64 `json:"frames"`
		Status [][2]any  `json:"status"`
	}
	rec, err := chromedp.Run(ctx, chromedp.Evaluate[record](`({frames: window.__frames, status: window.__status})`))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Frames) < 60 {
		t.Fatalf("%d frames recorded", len(rec.Frames))
	}
	var maxGap float64
	at := 0.0
	for i := 1; i < len(rec.Frames); i++ {
		if g := rec.Frames[i] - rec.Frames[i-1]; g > maxGap {
			maxGap, at = g, rec.Frames[i-1]
		}
	}
	var lines []string
	for _, s := range rec.Status {
		ms, _ := s[0].(float64)
		lines = append(lines, fmt.Sprintf("%+8.0f ms  %v", ms-sigAt, s[1]))
	}
	t.Logf("page status (times from SIGTERM to A):\n%s", strings.Join(lines, "\n"))
	msg := fmt.Sprintf("browser reconnect: longest gap between presented frames %.0f ms (at %+.0f ms from SIGTERM), %d frames over %.1f s from SIGTERM; now %q on B",
		maxGap, at-sigAt, len(rec.Frames), (rec.Frames[len(rec.Frames)-1]-sigAt)/1000, st.Status)
	t.Log(msg)
	fmt.Println(msg)
	if maxGap > 2000 {
		t.Errorf("the picture stopped for %.0f ms during the move, want at most about 2 s", maxGap)
	}
	srvA.WaitLog(t, 5*time.Second, "draining: viewers told to reconnect", "event_streams=1")
}
