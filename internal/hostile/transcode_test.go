package hostile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// oneCore runs the server pinned to one CPU, as on a 1 vCPU VPS: the
// transcode budget's default (transcode.maxCPUPercent 35) is then 0.35
// of a core, the box the "one publisher can take the box" is
// about.
var oneCore = []string{"taskset", "-c", "0"}

// bframeClip makes a short clip as OBS's Advanced output mode sends with
// its default x264 options (B-frames 2, keyframe every 2 s) at size and
// rate; it is published in a loop with -c copy, so publishing costs
// nothing and the server's transcode is the only heavy work. The clip is
// MP4: ffmpeg's -stream_loop over an MPEG-TS file with B-frames loses the
// last pictures of each pass (716 of 720 pictures in three passes,
// 2026-12-07), which the server rightly counts as a lost reference and
// skips a GOP for; over MP4 every pass is whole.
func bframeClip(t *testing.T, size string, rate, seconds int, bitrate string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bframes-"+size+".mp4")
	start := time.Now()
	testkit.FFmpeg(t, "-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=%s:rate=%d", size, rate), "-t", fmt.Sprint(seconds),
		"-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", fmt.Sprint(2*rate), "-pix_fmt", "yuv420p",
		"-b:v", bitrate, "-maxrate", bitrate, "-bufsize", bitrate, "-f", "mp4", out)
	t.Logf("%s %d fps B-frame clip made in %.1f s", size, rate, time.Since(start).Seconds())
	return out
}

// publishClip loops clip to path in real time.
func publishClip(t *testing.T, srv *testkit.Server, path, clip string) *testkit.Process {
	t.Helper()
	return testkit.StartFFmpeg(t, "-re", "-stream_loop", "-1", "-i", clip, "-c", "copy", "-f", "mpegts",
		srv.SRTURL("publish:"+path)+"&latency=500000")
}

// refusedWith waits until a viewer of path is refused with 409 and a
// detail containing every one of want, and returns the body.
func refusedWith(t *testing.T, srv *testkit.Server, path string, want ...string) string {
	t.Helper()
	var body string
	testkit.WaitFor(t, 20*time.Second, "a 409 for "+path+" naming "+strings.Join(want, ", "), func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		s, err := whepclient.Dial(ctx, srv.URL("/"+path+"/whep"), whepclient.Options{
			SettingEngine: func(se *webrtc.SettingEngine) { testkit.LoopbackOnly(se) }})
		if err == nil {
			_ = s.Close()
			return false
		}
		var he *whepclient.HTTPError
		if !errors.As(err, &he) || he.StatusCode != 409 {
			return false
		}
		body = he.Body
		for _, w := range want {
			if !strings.Contains(body, w) {
				return false
			}
		}
		return true
	})
	return body
}

// TestTranscodeFitsTheBox is issue 29's "one publisher can take the box"
// on a server limited to one core with the default transcode settings: a
// 1080p60 B-frame publisher (OBS's default x264 at 1080p60) is
// transcoded at 1280x720 and 30 fps within the budget (its measured CPU
// share printed and held under transcode.maxCPUPercent's 0.35 core), and
// a second such path, past the budget, is refused: its viewers get 409
// naming transcode.maxCPUPercent, the first path's viewer and a
// bystander play on.
func TestTranscodeFitsTheBox(t *testing.T) {
	clip := bframeClip(t, "1920x1080", 60, 4, "6M")
	srv := testkit.StartServer(t, testkit.BuildBinary(t, "./cmd/srtwhep"), testkit.LoopbackConfig(""), oneCore...)
	by := startBystander(t, srv)

	publishClip(t, srv, "live/obs1", clip)
	v := dialViewer(t, srv, "live/obs1", "1080p60 transcoded", whepclient.Options{Decode: true, NACK: true, ReceiverReports: true})
	srv.WaitLog(t, 20*time.Second, "video transcoder cost measured", "path=live/obs1")
	measured := srv.Log.Lines("video transcoder cost measured", "path=live/obs1")[0]

	// A window of the transcoded stream: its rate, size and the
	// transcoder's CPU over the same span.
	before, p0, from := v.Stats(), apiPath(t, srv, "live/obs1"), time.Now()
	const window = 6 * time.Second
	time.Sleep(window) // a measurement window, not a wait for a state
	after, p1 := v.Stats(), apiPath(t, srv, "live/obs1")
	elapsed := time.Since(from).Seconds()
	fps := float64(after.DecodedAUs-before.DecodedAUs) / elapsed
	if p0.Transcode == nil || p1.Transcode == nil {
		t.Fatalf("live/obs1 is not transcoded: %+v", p1)
	}
	cpu := (p1.Transcode.CPUSeconds - p0.Transcode.CPUSeconds) / elapsed
	used := testkit.MustMetric(t, srv.Addrs.Metrics, "srtwhep_transcode_cpu_budget_used_cores")
	limit := testkit.MustMetric(t, srv.Addrs.Metrics, "srtwhep_transcode_cpu_budget_limit_cores")
	t.Logf("1080p60 B-frames on one core: viewer %dx%d at %.1f fps, %d broken; transcoder %.1f%% of one core over %.0f s "+
		"(budget %.0f%% of %.0f%% in use); %s", after.Width, after.Height, fps, after.BrokenAUs-before.BrokenAUs,
		100*cpu, elapsed, 100*used, 100*limit, measured)
	if after.Width != 1280 || after.Height != 720 {
		t.Errorf("the viewer decoded %dx%d, want 1280x720", after.Width, after.Height)
	}
	// About 30 fps is a figure of make bench's quiet run
	// (HOSTILE_TRANSCODE); in make test the e2e line's Chromium and
	// shaped-link tests share the two cores with this 1080p60 decode, and
	// it once delivered 24.3: there the viewer must only keep playing.
	if minFPS := transcodeMinFPS(); fps < minFPS || fps > 31 {
		t.Errorf("the transcoded viewer got %.1f fps, want about 30 (≥ %.0f)", fps, minFPS)
	}
	if limit != 0.35 || used <= 0 {
		t.Errorf("budget %.2f of %.2f used; want the default 35 %% of one core, holding the running transcode", used, limit)
	}
	// Within the budget is a figure of make bench's run on a quiet machine
	// (HOSTILE_TRANSCODE); in make test other tests share the cores and
	// stretch what the transcoder's thread measures.
	if os.Getenv("HOSTILE_TRANSCODE") != "" && (cpu > limit || used > limit) {
		t.Errorf("transcoder at %.2f cores, budget %.2f of %.2f used; want it within the budget", cpu, used, limit)
	}

	// The second such path does not fit beside the first.
	publishClip(t, srv, "live/obs2", clip)
	body := refusedWith(t, srv, "live/obs2", "transcode.maxCPUPercent", "B-frames")
	t.Logf("second 1080p60 path refused: %s", body)
	srv.WaitLog(t, 10*time.Second, "video transcode refused", "path=live/obs2", "reason=transcode-budget")
	if n := testkit.MustMetric(t, srv.Addrs.Metrics, "srtwhep_transcode_refusals_total", "reason", "cpu_budget"); n < 1 {
		t.Errorf("srtwhep_transcode_refusals_total{reason=cpu_budget} = %v after a refusal", n)
	}
	// The first path's viewer was not disturbed by the refusal.
	b0, t0 := v.Stats(), time.Now()
	by.waitWindow()
	time.Sleep(time.Until(t0.Add(3 * time.Second)))
	b1 := v.Stats()
	if f := float64(b1.DecodedAUs-b0.DecodedAUs) / time.Since(t0).Seconds(); f < transcodeMinFPS() {
		t.Errorf("the first transcoded path's viewer fell to %.1f fps after the second path's refusal", f)
	}
	by.Check(t)
}

// TestTranscode8KRefused: an 8K publisher with B-frames needs a transcode
// whose decoder would take hundreds of megabytes; its pictures are above
// transcode.maxDecodeArea (4K UHD), so it is refused before any is
// decoded: its viewers get 409 with the reason, the server's RSS grows
// less than 100 MB, and a bystander plays on.
func TestTranscode8KRefused(t *testing.T) {
	clip := bframeClip(t, "7680x4320", 10, 1, "8M")
	srv := startServer(t, "")
	by := startBystander(t, srv)
	rss0 := rss(t, srv)
	publishClip(t, srv, "live/8k", clip)
	body := refusedWith(t, srv, "live/8k", "7680x4320", "transcode.maxDecodeArea")
	srv.WaitLog(t, 10*time.Second, "video transcode refused", "path=live/8k", "reason=picture-too-large")
	// Several loops of the clip reach the server meanwhile (each IDR is
	// another try), so a decoder that did allocate would show.
	by.waitWindow()
	time.Sleep(3 * time.Second)
	grew := rss(t, srv) - rss0
	n := testkit.MustMetric(t, srv.Addrs.Metrics, "srtwhep_transcode_refusals_total", "reason", "decode_area")
	t.Logf("8K B-frames refused (%v tries counted), server RSS grew %.1f MB: %s", n, mb(grew), body)
	if grew > 100<<20 {
		t.Errorf("RSS grew %.1f MB, want < 100", mb(grew))
	}
	if n < 1 {
		t.Errorf("srtwhep_transcode_refusals_total{reason=decode_area} = %v", n)
	}
	by.Check(t)
}

// transcodeMinFPS is the frame rate a transcoded viewer must keep: 27 of
// 30 on a quiet machine (HOSTILE_TRANSCODE, make bench), 15 beside the
// rest of make test.
func transcodeMinFPS() float64 {
	if os.Getenv("HOSTILE_TRANSCODE") != "" {
		return 27
	}
	return 15
}
