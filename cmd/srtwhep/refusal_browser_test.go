package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/config"
)

// refusedPublisher is an encoder setting main refuses at ingest with
// video: passthrough (B-frames), and the words the page must show for it.
// It stays H.264 with B-frames: an H.265 publisher is not refused at
// ingest but per viewer (409 video-codec-unsupported), which
// TestBrowserShowsH265Refusal covers.
var refusedPublisher = struct {
	args  []string
	shows []string
}{
	args:  []string{"-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "60"},
	shows: []string{"The stream cannot be played", "B-frames", "ffmpeg -bf 0", "OBS Simple output mode", "GStreamer: x264enc bframes=0"},
}

// playerInState opens the player page at url and waits until it reports
// state; it returns the page's poller and what it reported then.
func playerInState(t *testing.T, ctx context.Context, url, state string) (func() playerStats, playerStats) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open the player page: %v", err)
	}
	poll := pagePoller[playerStats](t, ctx)
	var st playerStats
	testkit.WaitFor(t, 15*time.Second, "the page to be in state "+state, func() bool {
		st = poll()
		return st.State == state
	})
	return poll, st
}

// TestBrowserShowsRefusal opens the built-in player in headless Chromium
// on a path whose publisher was refused (video: passthrough and a stream
// browsers cannot play): the page says so in plain words, with the fix,
// instead of "Waiting for the stream…", and keeps asking, so it plays as
// soon as a publisher with the right settings comes.
func TestBrowserShowsRefusal(t *testing.T) {
	// Asserts what the page shows, not how soon: see browserNetns.
	t.Parallel()
	b := browserAndServer(t, "10.233.0", pathVideo(config.VideoPassthrough))
	ctx, srv, srvNS := b.ctx, b.srv, b.srvNS
	bad := testkit.StartProcess(t, "ffmpeg", srvNS.command("ffmpeg", append(append([]string{"-hide_banner", "-loglevel", "error", "-nostdin",
		"-re", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30"}, refusedPublisher.args...),
		"-f", "mpegts", srv.SRTURL("publish:live/cam1"))...))
	srv.WaitLog(t, 15*time.Second, "publisher closed", "path=live/cam1", "B-frames")
	_ = bad.Wait(t, 15*time.Second) // ffmpeg exits once refused

	poll, st := playerInState(t, ctx, "http://10.233.0.1:8889/live/cam1", "problem")
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

// TestBrowserShowsH265Refusal (issue 21): headless Chromium, which offers
// no H.265, opens the player on an H.265 path that the server does not
// convert (video: passthrough). The page shows the server's refusal in
// plain words (the codec, and the fixes for the viewer, the operator and
// the publisher), plays nothing, and keeps asking slowly: once the
// publisher switches to H.264 on the same path, it plays.
func TestBrowserShowsH265Refusal(t *testing.T) {
	// Asserts what the page shows, not how soon: see browserNetns.
	t.Parallel()
	b := browserAndServer(t, "10.234.0", pathVideo(config.VideoPassthrough))
	ctx, srv, srvNS := b.ctx, b.srv, b.srvNS
	// The H.265 is encoded before it is published, not live: libx265
	// needs seconds to give its first picture on a machine busy
	// compiling, and a publisher that sends nothing for srt.readTimeout
	// (2 s) is rightly hung up on. What the page shows for H.265 does not
	// depend on how fast it was encoded.
	clip := filepath.Join(t.TempDir(), "hevc.ts")
	// As fast as it encodes: without x265Args' -re.
	enc := slices.DeleteFunc(x265Args("640x360", "-t", "4"), func(a string) bool { return a == "-re" })
	testkit.FFmpeg(t, append(enc, "-f", "mpegts", clip)...)
	hevc := testkit.StartProcess(t, "ffmpeg", srvNS.command("ffmpeg", "-hide_banner", "-loglevel", "warning", "-nostdin",
		"-re", "-stream_loop", "-1", "-i", clip, "-c", "copy", "-f", "mpegts", srv.SRTURL("publish:live/cam1")))
	srv.WaitLog(t, 15*time.Second, "stream parameters", "path=live/cam1", "codec=H265")

	start := time.Now()
	poll, st := playerInState(t, ctx, "http://10.234.0.1:8889/live/cam1", "unsupported")
	t.Logf("page shows, %d ms after navigation: %s", time.Since(start).Milliseconds(), st.Status)
	for _, w := range []string{"H.265", "this browser cannot play", "Safari 17+", "set video: auto", "-c:v libx264 -bf 0"} {
		if !strings.Contains(st.Status, w) {
			t.Errorf("page shows %q, want it to name %q", st.Status, w)
		}
	}
	if st.FramesDecoded != 0 || st.VideoWidth != 0 {
		t.Errorf("refused page decoded %d frames at width %d, want no video", st.FramesDecoded, st.VideoWidth)
	}
	srv.WaitLog(t, 5*time.Second, "offer refused", "reason=video-codec-unsupported", "path=live/cam1")

	// The encoder is switched to H.264 on the same path; the page, asking
	// again every 20 s, plays it.
	_ = hevc.Cmd.Process.Kill()
	_ = hevc.Wait(t, 10*time.Second)
	switched := time.Now()
	ffmpegInNetns(t, srvNS, "640x360", srv.SRTURL("publish:live/cam1"))
	srv.WaitLog(t, 15*time.Second, "stream parameters", "path=live/cam1", "codec=H264")
	testkit.WaitFor(t, 60*time.Second, "the page to play the H.264 publisher", func() bool {
		st = poll()
		return st.FramesDecoded > 0 && st.State == "playing"
	})
	t.Logf("page plays %s %d ms after the publisher switched to H.264", st.Codec, time.Since(switched).Milliseconds())
	if !strings.Contains(strings.ToLower(st.Codec), "h264") {
		t.Errorf("the browser decodes %q, want H.264", st.Codec)
	}
}
