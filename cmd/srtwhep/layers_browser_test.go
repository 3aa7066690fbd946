package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// TestBrowserQualityMenu plays the built-in player in headless Chromium
// and uses its quality menu: the menu lists Auto and each layer of the
// session's ladder (from the layers event or the layer URL), the page
// shows the rendition it gets, and a choice is POSTed to the layer Link
// and accepted. With renditions in the ladder it pins the lowest and the
// decoder must get its size; with the source alone it pins the source.
//
// Parallel-safe: it asserts what the page shows, not how soon.
func TestBrowserQualityMenu(t *testing.T) {
	t.Parallel()
	b := browserAndServer(t, "10.238.0", "")
	ctx, srv := b.ctx, b.srv
	publishWithSound(t, b.srvNS, srv.SRTURL("publish:live/cam1"))
	srv.WaitLog(t, 15*time.Second, "stream parameters", "path=live/cam1")
	if err := chromedp.Do(ctx, chromedp.Navigate("http://10.238.0.1:8889/live/cam1")); err != nil {
		t.Fatalf("open the player page: %v", err)
	}
	type pageState struct {
		State          string   `json:"state"`
		FrameHeight    int      `json:"frameHeight"`
		FramesDecoded  int      `json:"framesDecoded"`
		Layer          *string  `json:"layer"`
		Layers         []string `json:"layers"`
		LayerPinned    *string  `json:"layerPinned"`
		LayerLabel     string   `json:"layerLabel"`
		LayerChoice    string   `json:"layerChoice"`
		LayerPinStatus *int     `json:"layerPinStatus"`
		// What the page shows, read from its DOM.
		Menu      []string `json:"menu"`
		MenuShown bool     `json:"menuShown"`
		Shown     string   `json:"shown"`
	}
	read := func() pageState {
		t.Helper()
		st, err := chromedp.Run(ctx, chromedp.Evaluate[pageState](`window.srtwhepStats().then((s) => {
  const q = document.getElementById("quality");
  s.menu = Array.from(q.options).map((o) => o.value);
  s.menuShown = !q.hidden;
  s.shown = document.getElementById("layer").textContent;
  return s;
})`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("read the page: %v", err)
		}
		return st
	}
	var st pageState
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := json.Marshal(st)
			t.Logf("the page last read: %s", b)
		}
	})
	// A session takes its path's ladder as it starts, and the ladder is
	// planned at the end of the source's first whole GOP (2 s here): the
	// page is loaded again once it has played past that.
	testkit.WaitFor(t, 20*time.Second, "the page to play 3 s", func() bool {
		st = read()
		return st.State == "playing" && st.FramesDecoded > 90
	})
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatalf("reload the player page: %v", err)
	}
	// The 720p source has a 360p rendition below it (renditions: auto);
	// under load the session may learn its path's ladder after it plays,
	// and a menu read before that would offer the source alone.
	testkit.WaitFor(t, 20*time.Second, "the page to play and show its quality menu with the 360p rendition", func() bool {
		st = read()
		return st.State == "playing" && st.FramesDecoded > 0 && st.MenuShown && st.Layer != nil && len(st.Layers) > 1
	})
	if want := append([]string{"auto"}, st.Layers...); !slices.Equal(st.Menu, want) || st.Layers[0] != "source" {
		t.Fatalf("menu %q, ladder %q: want Auto then each layer, the source on top", st.Menu, st.Layers)
	}
	if st.Shown != st.LayerLabel || st.Shown == "" {
		t.Errorf("the page shows %q, its label is %q", st.Shown, st.LayerLabel)
	}
	if len(st.Layers) == 1 && st.Shown != "720p" {
		t.Errorf("one layer, the 720p source: the page shows %q, want 720p", st.Shown)
	}
	pin := st.Layers[len(st.Layers)-1]
	t.Logf("menu %q, showing %q; choosing %q", st.Menu, st.Shown, pin)
	// As a viewer's pick does: the value changes, then "change" fires.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
  const q = document.getElementById("quality");
  q.value = %q;
  return q.dispatchEvent(new Event("change"));
})()`, pin))); err != nil {
		t.Fatalf("choose %q: %v", pin, err)
	}
	testkit.WaitFor(t, 15*time.Second, fmt.Sprintf("the page to be sent %q after choosing it", pin), func() bool {
		st = read()
		return st.LayerPinStatus != nil && *st.LayerPinStatus == 200 && st.LayerChoice == pin &&
			st.Layer != nil && *st.Layer == pin && (len(st.Layers) == 1 || st.FrameHeight < 720)
	})
	if len(st.Layers) > 1 && (st.LayerPinned == nil || *st.LayerPinned != pin || st.Shown != st.LayerLabel) {
		t.Errorf("after choosing %q: pinned %v, shows %q", pin, st.LayerPinned, st.Shown)
	}
	msg := fmt.Sprintf("browser quality menu: %q, chose %q, page shows %q, decoding %d lines", st.Menu, pin, st.Shown, st.FrameHeight)
	t.Log(msg)
	fmt.Println(msg)
}
