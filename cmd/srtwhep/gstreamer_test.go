package main

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/api"
	"github.com/srtwhep/srtwhep/pkg/config"
)

// startGStreamer runs gst-launch-1.0 with pipeline (one argument per
// element and property, as a shell would split it) until the test ends.
func startGStreamer(t *testing.T, pipeline ...string) *testkit.Process {
	t.Helper()
	if _, err := exec.LookPath("gst-launch-1.0"); err != nil {
		t.Skip("gst-launch-1.0 not found: apt-get install -y gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly (scripts/deps.sh test)")
	}
	return testkit.StartProcess(t, "gst-launch-1.0", exec.Command("gst-launch-1.0", append([]string{"-q"}, pipeline...)...))
}

// TestGStreamerNoPicture publishes with real GStreamer 1.22 (Debian's
// plugins-bad srtsink) the way users get wrong, and checks that the
// person opening the player is told why there is no picture and how to
// fix it, instead of a 201 with sound and a black screen:
//
//   - h264parse ! mpegtsmux without alignment=7: srtsink drops the
//     buffers mpegtsmux marks as stream headers, so no SPS/PPS and no IDR
//     ever arrives (without h264parse, x264enc's own output does arrive
//     here: that pipeline is not the one that fails);
//   - no format=I420 with video: passthrough: x264enc picks High 4:4:4
//     Predictive, which browsers cannot decode.
func TestGStreamerNoPicture(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, reason string
		caps         string
		fixes        []string
	}{
		{"no alignment=7", "no-idr", "video/x-raw,width=640,height=360,framerate=30/1,format=I420",
			[]string{"mpegtsmux alignment=7", "h264parse config-interval=-1", "-bsf:v dump_extra"}},
		{"4:4:4 passthrough", "unplayable-profile", "video/x-raw,width=640,height=360,framerate=30/1",
			[]string{"format=I420", "-pix_fmt yuv420p", "Color Format NV12"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, func(c *config.Config) { c.PathDefaults.Video = "passthrough" })
			pipeline := []string{"videotestsrc", "is-live=true", "!", tc.caps, "!", "x264enc", "tune=zerolatency", "bframes=0", "key-int-max=60", "!"}
			if tc.reason == "no-idr" {
				pipeline = append(pipeline, "h264parse", "!")
			}
			pipeline = append(pipeline, "mpegtsmux", "!", "srtsink", "uri="+ts.srtURL("publish:live/gst"))
			startGStreamer(t, pipeline...)

			line := ts.logs.WaitLog(t, 20*time.Second, "no decodable picture", "path=live/gst", "reason="+tc.reason)
			for _, fix := range tc.fixes {
				if !strings.Contains(line, fix) {
					t.Errorf("warning %q does not name %q", line, fix)
				}
			}

			code, hdr, body := request(t, http.MethodPost, ts.httpURL("/live/gst/whep"), "", "application/sdp", offerSDP(t))
			var p struct{ Type, Detail string }
			_ = json.Unmarshal([]byte(body), &p)
			if code != http.StatusConflict || !strings.HasSuffix(p.Type, "/no-decodable-picture") || hdr.Get("Retry-After") == "" {
				t.Fatalf("POST: %d %s, want 409 no-decodable-picture with Retry-After", code, body)
			}
			for _, fix := range tc.fixes {
				if !strings.Contains(p.Detail, fix) {
					t.Errorf("problem detail %q does not name %q", p.Detail, fix)
				}
			}
			t.Logf("viewer gets: %d %s", code, p.Detail)

			var paths struct{ Paths []api.Path }
			if code := ts.apiJSON(t, http.MethodGet, "/v1/paths", "", &paths); code != http.StatusOK {
				t.Fatalf("GET /v1/paths: %d", code)
			}
			var shown bool
			for _, ap := range paths.Paths {
				shown = shown || ap.Name == "live/gst" && ap.Warning != nil && ap.Warning.Reason == tc.reason
			}
			var sampled bool
			for _, s := range ts.ingest.PathSamples() {
				sampled = sampled || s.Path == "live/gst" && s.NoPicture == tc.reason
			}
			if !shown || !sampled {
				t.Errorf("/v1/paths warning %v, metric sample %v; want both (%+v)", shown, sampled, paths)
			}
			if n := len(ts.logs.Lines("no decodable picture")); n != 1 {
				t.Errorf("%d warnings, want 1", n)
			}
		})
	}
}
