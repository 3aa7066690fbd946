package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/wheplayer"
)

// getLayers reads the session's layers from its layer URL.
func getLayers(t *testing.T, target string) whepclient.Layers {
	t.Helper()
	resp, body := testkit.Do(t, http.MethodGet, target, "", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", target, resp.StatusCode, body)
	}
	ls, err := whepclient.ParseLayers([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

// TestLayerPinStays: a viewer of a live 720p path pins a layer through
// the layer Link and stays on it. On a path whose ladder has renditions
// it pins the lowest, and must be sent it (the picture's size is the
// layer's) for as long as it watches, whatever its bandwidth estimate
// says; on a path with the source alone it pins the source, and a
// rendition the ladder lacks is refused with 400 naming the ladder.
func TestLayerPinStays(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	startFFmpeg(t, x264Args("1280x720"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")
	// A session takes its path's ladder as it starts, and the ladder is
	// planned at the end of the source's first whole GOP (2 s here).
	testkit.WaitFor(t, 15*time.Second, "the source's first two GOPs", func() bool { return ts.framesIn("live/cam1") >= 120 })
	v := dialViewer(t, ts, "live/cam1")
	v.waitUnits(t, 30, 15*time.Second)

	target := whepclient.LayerLink(v.SessionURL(), v.Links())
	if want := v.SessionURL() + "/layer"; target != want {
		t.Fatalf("layer Link %q, want %q (links %q)", target, want, v.Links())
	}
	ls := getLayers(t, target)
	if len(ls.List) == 0 || ls.List[0].RID != wheplayer.SourceLayer || ls.List[0].Width != 1280 || ls.List[0].Height != 720 {
		t.Fatalf("ladder %+v, want the 1280x720 source on top", ls.List)
	}
	pin := ls.List[len(ls.List)-1]
	t.Logf("ladder %v, active %q; pinning %q", ls.IDs(), ls.Active(), pin.RID)
	if !slices.Contains(ls.IDs(), "360p") {
		resp, body := testkit.Do(t, http.MethodPost, target, "application/json", `{"encodingId":"360p"}`, nil)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `\"360p\"`) || !strings.Contains(body, "source (1280x720)") {
			t.Errorf("pin of a rendition the ladder lacks: %d %s, want 400 naming the ladder", resp.StatusCode, body)
		}
	}
	resp, body := testkit.Do(t, http.MethodPost, target, "application/json",
		fmt.Sprintf(`{"mediaId":%q,"encodingId":%q}`, ls.MediaID, pin.RID), nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("pin %q: %d %s", pin.RID, resp.StatusCode, body)
	}
	// A switch waits for the layer's next IDR (a 2 s GOP here).
	testkit.WaitFor(t, 15*time.Second, "the viewer to be sent "+pin.RID, func() bool {
		st := v.Stats()
		return getLayers(t, target).Active() == pin.RID && st.Width == pin.Width && st.Height == pin.Height
	})
	// Then it stays there: every look for 5 s.
	n0 := v.count()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		ls := getLayers(t, target)
		st := v.Stats()
		if ls.Active() != pin.RID || st.Width != pin.Width || st.Height != pin.Height {
			t.Fatalf("pinned to %q (%dx%d), now sent %q and decoding %dx%d", pin.RID, pin.Width, pin.Height, ls.Active(), st.Width, st.Height)
		}
		// A path with a ladder keeps the pin in the session's state.
		if len(ls.List) > 1 && ls.Pinned() != pin.RID {
			t.Fatalf("pin %q lost: the session reports %q", pin.RID, ls.Pinned())
		}
	}
	// Pinned is still playing: a second's pictures at least (150 when the
	// machine is quiet; this test runs beside others).
	if got := v.count() - n0; got < 30 {
		t.Errorf("%d pictures in the 5 s pinned, want about 150", got)
	}
	msg := fmt.Sprintf("layer pin: ladder %v, pinned %q (%dx%d), %d pictures in 5 s on it", ls.IDs(), pin.RID, pin.Width, pin.Height, v.count()-n0)
	t.Log(msg)
	fmt.Println(msg)
}
