package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/config"
)

// x265Args is what the issue publishes with: ffmpeg's libx265 without
// B-frames, a keyframe every 2 s at 30 fps.
func x265Args(size string, extra ...string) []string {
	args := []string{"-re", "-f", "lavfi", "-i", "testsrc2=size=" + size + ":rate=30",
		"-c:v", "libx265", "-preset", "ultrafast", "-bf", "0", "-x265-params", "keyint=60:log-level=error", "-b:v", "800k"}
	return append(args, extra...)
}

func withH265(o *whepclient.Options) { o.H265 = true }

// requireCodec stops the test at the first picture not of the codec
// (H.265 or H.264) the viewer should get.
func requireCodec(t *testing.T, name string, aus []whepclient.AccessUnit, h265 bool) {
	t.Helper()
	for i, au := range aus {
		if au.H265 != h265 {
			t.Fatalf("%s: picture %d is H.265 %v, want %v", name, i, au.H265, h265)
		}
	}
}

const h265Reason = "H.265 to a viewer that did not offer H.265"

// TestH265: ffmpeg publishes H.265 over SRT (video: auto). A pion viewer
// that offers H.265 gets it as published, which ffmpeg decodes to the
// published size at 30 fps; a viewer offering only H.264 then gets H.264
// from the path's transcoder, at 30 fps and soon after connecting, while
// the first viewer keeps the original; the reason appears once in the
// log; an SRT reader gets the H.265 as published.
func TestH265(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	startFFmpeg(t, x265Args("640x360"), ts.srtURL("publish:live/hevc"))
	ts.waitPublisher(t, "live/hevc")

	hevc := dialViewer(t, ts, "live/hevc", withH265)
	hevc.waitLive(t, 60, 30*time.Second)
	aus := hevc.units()
	requireCodec(t, "H.265 viewer", aus, true)
	if !aus[0].IDR {
		t.Error("H.265 viewer: the first picture is not an IRAP picture")
	}
	fps := liveFrameRate(aus)
	frames, size := decodeAnnexB(t, aus, "hevc")
	t.Logf("H.265 passthrough: %d pictures at %.1f fps by RTP timestamps; ffmpeg decoded %d at %s", len(aus), fps, frames, size)
	if fps < 29 || fps > 31 {
		t.Errorf("H.265 viewer: %.1f fps, want 30", fps)
	}
	if frames < len(aus)-1 || size != "640,360" {
		t.Errorf("H.265 viewer: ffmpeg decoded %d of %d pictures at %s, want 640,360", frames, len(aus), size)
	}
	if lines := ts.logs.Lines("video transcoded"); len(lines) != 0 {
		t.Errorf("transcoding with only an H.265 viewer: %q", lines)
	}

	before := hevc.count()
	h264 := dialViewer(t, ts, "live/hevc")
	connected := time.Now()
	h264.waitUnits(t, 120, 30*time.Second)
	avc := h264.units()
	first := avc[0].Received.Sub(connected)
	live := avc[len(avc)-60:]
	fps = liveFrameRate(live)
	frames, size = decodeH264(t, avc)
	t.Logf("H.264 viewer of the H.265 path: first picture %v after connecting; %.1f fps by RTP timestamps; ffmpeg decoded %d of %d at %s",
		first, fps, frames, len(avc), size)
	requireCodec(t, "H.264 viewer", avc, false)
	checkStartsWithIDR(t, "H.264 viewer", avc)
	// Generous: the machine is shared; the figure above is what counts.
	if first > 3*time.Second {
		t.Errorf("H.264 viewer: first picture %v after connecting, want well under 3 s", first)
	}
	if fps < 27 || fps > 33 {
		t.Errorf("H.264 viewer: %.1f fps, want 30", fps)
	}
	if frames < len(avc)-1 || size != "640,360" {
		t.Errorf("H.264 viewer: ffmpeg decoded %d of %d pictures at %s, want 640,360", frames, len(avc), size)
	}
	if lines := ts.logs.Lines("video transcoded to H.264 for browsers", "path=live/hevc", h265Reason); len(lines) != 1 {
		t.Errorf("%d transcoding lines naming %q, want one: %q", len(lines), h265Reason, lines)
	} else if !strings.Contains(lines[0], "libx264 -bf 0") {
		t.Errorf("the transcoding line lacks the fix: %s", lines[0])
	}
	// The H.265 viewer kept the original all along.
	hevc.waitUnits(t, before+60, 30*time.Second)
	requireCodec(t, "H.265 viewer, once an H.264 viewer joined", hevc.units(), true)
	checkFullRateSince(t, "H.265 viewer", hevc.units()[before:])

	p := probeSRT(t, ts, "read:live/hevc", 2)
	if got := p.streams(); len(got) != 1 || got[0] != "video:hevc" {
		t.Errorf("SRT read streams %v, want video:hevc", got)
	}
	t.Logf("SRT read: %d H.265 packets at %.1f fps", len(p.pts(0)), rate(p.pts(0)))
}

// TestH265Passthrough: with video: passthrough a viewer without H.265
// is refused with 409 video-codec-unsupported and the fix, and nothing
// is transcoded.
func TestH265Passthrough(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *config.Config) { c.PathDefaults.Video = config.VideoPassthrough })
	startFFmpeg(t, x265Args("320x240"), ts.srtURL("publish:live/hevc"))
	ts.waitPublisher(t, "live/hevc")
	testkit.WaitFor(t, 20*time.Second, "the stream's H.265 parameters", func() bool {
		return ts.hub.State("live/hevc").Playable
	})
	resp, err := http.Post(ts.httpURL("/live/hevc/whep"), "application/sdp", strings.NewReader(offerSDP(t)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Logf("%d %s", resp.StatusCode, body)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), "video-codec-unsupported") ||
		!strings.Contains(string(body), "H.265") {
		t.Errorf("status %d, body %s; want 409 video-codec-unsupported naming H.265", resp.StatusCode, body)
	}
	if lines := ts.logs.Lines("video transcoded"); len(lines) != 0 {
		t.Errorf("transcoded with video: passthrough: %q", lines)
	}
}

// TestH265Edge: an edge pulling an H.265 path carries it as published:
// its viewer that offers H.265 gets H.265.
func TestH265Edge(t *testing.T) {
	t.Parallel()
	origin := startServer(t, nil)
	startFFmpeg(t, x265Args("320x240"), origin.srtURL("publish:live/hevc"))
	origin.waitPublisher(t, "live/hevc")
	edge := edgeTo(t, "srt://"+origin.srt.Addr().String(), nil)
	v := dialViewer(t, edge, "live/hevc", withH265)
	v.waitUnits(t, 60, 30*time.Second)
	aus := v.units()
	requireCodec(t, "edge viewer", aus, true)
	frames, size := decodeAnnexB(t, aus, "hevc")
	t.Logf("edge viewer: %d H.265 pictures at %.1f fps; ffmpeg decoded %d at %s", len(aus), liveFrameRate(aus), frames, size)
	if !aus[0].IDR || frames < len(aus)-1 || size != "320,240" {
		t.Errorf("edge viewer: first IRAP %v, ffmpeg decoded %d of %d at %s; want an IRAP first, all decoded at 320,240",
			aus[0].IDR, frames, len(aus), size)
	}
}

// TestBrowserPlaysH265: headless Chromium, which has no HEVC decoder
// here and so offers no H.265, plays an H.265 path through its H.264
// rendition from the player page, as any such browser will.
func TestBrowserPlaysH265(t *testing.T) {
	// Asserts what the page shows, not how soon: see browserNetns.
	t.Parallel()
	b := browserAndServer(t, "10.217.0", pathVideo(config.VideoAuto))
	ctx, srv, srvNS := b.ctx, b.srv, b.srvNS
	args := append([]string{"-hide_banner", "-loglevel", "warning", "-nostdin"}, x265Args("640x360")...)
	testkit.StartProcess(t, "ffmpeg", srvNS.command("ffmpeg", append(args, "-f", "mpegts", srv.SRTURL("publish:live/hevc"))...))
	srv.WaitLog(t, 15*time.Second, "stream parameters", "path=live/hevc", "codec=H265")

	if err := chromedp.Do(ctx, chromedp.Navigate("http://10.217.0.1:8889/live/hevc")); err != nil {
		t.Fatalf("open the player page: %v", err)
	}
	poll := pagePoller[playerStats](t, ctx)
	var st playerStats
	testkit.WaitFor(t, 20*time.Second, "the video to play at 640x360", func() bool {
		st = poll()
		return st.VideoWidth == 640 && st.VideoHeight == 360 && st.FramesDecoded > 0 && st.FirstFrameMs != nil
	})
	f0 := st.FramesDecoded
	testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("framesDecoded to grow from %d by 60", f0), func() bool {
		st = poll()
		return st.FramesDecoded >= f0+60
	})
	t.Logf("browser on the H.265 path: codec %s, first frame %d ms after navigation, %.0f fps", st.Codec, *st.FirstFrameMs, st.FramesPerSecond)
	if !strings.Contains(strings.ToLower(st.Codec), "h264") {
		t.Errorf("the browser decodes %q, want H.264 from the path's rendition", st.Codec)
	}
	srv.WaitLog(t, 5*time.Second, "video transcoded to H.264 for browsers", "path=live/hevc", h265Reason)
}
