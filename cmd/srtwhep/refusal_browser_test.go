package main

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// refusedPublisher is an encoder setting main refuses with video:
// passthrough (B-frames), and the words the page must show for it. Once
// H.265 ingest lands, passthrough to a browser without H.265 is refused
// too: swap in "-c:v", "libx265" here and its fix.
var refusedPublisher = struct {
	args  []string
	shows []string
}{
	args:  []string{"-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "60"},
	shows: []string{"The stream cannot be played", "B-frames", "ffmpeg -bf 0", "OBS Simple output mode", "GStreamer: x264enc bframes=0"},
}

// TestBrowserShowsRefusal opens the built-in player in headless Chromium
// on a path whose publisher was refused (video: passthrough and a stream
// browsers cannot play): the page says so in plain words, with the fix,
// instead of "Waiting for the stream…", and keeps asking, so it plays as
// soon as a publisher with the right settings comes.
func TestBrowserShowsRefusal(t *testing.T) {
	requireNetns(t, chromiumPath)
	bin := testkit.BuildBinary(t, "./cmd/srtwhep")
	srvNS, cliNS := newNetns(t, "srv"), newNetns(t, "cli")
	link(t, srvNS, "s0", "10.233.0.1/24", cliNS, "c0", "10.233.0.2/24")
	cliNS.ip(t, "route", "add", "default", "via", "10.233.0.1")
	ctx := newBrowser(t, cliNS)
	srv := serverInNetns(t, bin, srvNS, `srt:
  listen: "127.0.0.1:8890"
http:
  drainTimeout: 0s
  listen: "10.233.0.1:8889"
webrtc:
  listenIP: 10.233.0.1
  udpPort: 8189
  tcpPort: 8189
`+testkit.MediaPlaneYAML()+`metrics:
  listen: ""
pathDefaults:
  video: passthrough
`)
	bad := testkit.StartProcess(t, "ffmpeg", srvNS.command("ffmpeg", append(append([]string{"-hide_banner", "-loglevel", "error", "-nostdin",
		"-re", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30"}, refusedPublisher.args...),
		"-f", "mpegts", srv.SRTURL("publish:live/cam1"))...))
	srv.WaitLog(t, 15*time.Second, "publisher closed", "path=live/cam1", "B-frames")
	_ = bad.Wait(t, 15*time.Second) // ffmpeg exits once refused

	if err := chromedp.Do(ctx, chromedp.Navigate("http://10.233.0.1:8889/live/cam1")); err != nil {
		t.Fatalf("open the player page: %v", err)
	}
	poll := pagePoller[playerStats](t, ctx)
	var st playerStats
	testkit.WaitFor(t, 15*time.Second, "the page to show the refusal", func() bool {
		st = poll()
		return st.State == "problem"
	})
	for _, w := range refusedPublisher.shows {
		if !strings.Contains(st.Status, w) {
			t.Errorf("page shows %q, want it to name %q", st.Status, w)
		}
	}
	t.Logf("page shows: %s", st.Status)

	publishInNetns(t, srvNS, srv, "live/cam1")
	testkit.WaitFor(t, 30*time.Second, "the page to play the fixed publisher", func() bool {
		st = poll()
		return st.FramesDecoded > 0 && st.State != "problem"
	})
}
