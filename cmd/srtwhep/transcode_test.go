package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/config"
	"github.com/srtwhep/srtwhep/pkg/ingest"
)

// TestTranscode: streams a browser cannot play as published reach a real
// pion viewer that offers only H.264 through the path's transcoder (video:
// auto): ffmpeg with B-frames, and ffmpeg with x264's default 250-frame
// GOP (8.3 s, above maxKeyframeInterval). The viewer gets H.264 that
// ffmpeg decodes to the published size at about 30 fps, its first picture
// soon after connecting (from the transcoded GOP in the cache), and the
// reason appears once in the log.
func TestTranscode(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	for _, tc := range []struct {
		name, path, reason string
		args               []string
	}{
		// veryfast keeps the publisher cheap on a shared machine; the
		// B-frames (2, with x264's default b-pyramid) are what matters.
		{"B-frames", "live/bframes", "B-frames", []string{"-preset", "veryfast", "-bf", "2", "-g", "60"}},
		{"250-frame GOP", "live/longgop", "keyframe interval", []string{"-preset", "veryfast", "-bf", "0", "-g", "250"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-re", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-c:v", "libx264", "-b:v", "1500k"}, tc.args...)
			startFFmpeg(t, args, ts.srtURL("publish:"+tc.path))
			// The long GOP is noticed 4 s into the first GOP.
			line := ts.logs.WaitLog(t, 30*time.Second, "video transcoded to H.264 for browsers", "path="+tc.path)
			t.Logf("log: %s", line)
			if !strings.Contains(line, tc.reason) || !strings.Contains(line, "fix=") {
				t.Errorf("the line does not say why (%s) or how to avoid it", tc.reason)
			}

			v := dialViewer(t, ts, tc.path)
			connected := time.Now()
			// The cached GOP comes first, sent ahead of real time with
			// timestamps 8 ms apart: on the long-GOP path it can still be
			// the source's GOP passed through before the transcoder took
			// over (up to maxKeyframeInterval, 4 s, 120 pictures), so the
			// rate is read on the live pictures after it, however long
			// the machine's load makes the burst.
			v.waitUnits(t, 240, 30*time.Second)
			v.waitLive(t, 40, 30*time.Second)
			aus := v.units()
			first := aus[0].Received.Sub(connected)
			live := liveUnits(aus)
			fps := float64(len(live)-1) * 90000 / float64(live[len(live)-1].RTPTimestamp-live[0].RTPTimestamp)
			wall := float64(len(live)-1) / live[len(live)-1].Received.Sub(live[0].Received).Seconds()
			t.Logf("first picture %v after connecting; live pictures at %.1f fps by RTP timestamps, %.1f fps by arrival", first, fps, wall)
			// Generous: the machine is shared. The figure is what counts.
			if first > 3*time.Second {
				t.Errorf("first picture %v after connecting, want well under 3 s", first)
			}
			if !aus[0].IDR {
				t.Errorf("the first picture is not an IDR")
			}
			if fps < 27 || fps > 33 {
				t.Errorf("%.1f fps by RTP timestamps, want 30", fps)
			}
			frames, size := decodeH264(t, aus)
			if frames < len(aus)-1 || size != "640,360" {
				t.Errorf("ffmpeg decoded %d of %d pictures at %s, want 640,360", frames, len(aus), size)
			}
			if lines := ts.logs.Lines("video transcoded to H.264 for browsers", "path="+tc.path); len(lines) != 1 {
				t.Errorf("%d transcoding lines for %s, want one", len(lines), tc.path)
			}
			st, ok := ingestPath(ts, tc.path)
			if !ok || st.Transcode.FramesOut == 0 || st.Transcode.Reason == "" || st.Totals.VideoTranscodeCPU <= 0 {
				t.Errorf("path stats: %+v, totals %+v", st.Transcode, st.Totals)
			}
			t.Logf("transcoder: mean latency %v (source picture in to transcoded picture out), CPU %v for %d pictures",
				st.Transcode.Latency, st.Totals.VideoTranscodeCPU, st.Totals.VideoTranscodedFrames)
		})
	}
}

// TestTranscodePassthrough: with video: passthrough, B-frames are still
// refused with the fix, and nothing is transcoded.
func TestTranscodePassthrough(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *config.Config) { c.PathDefaults.Video = config.VideoPassthrough })
	startFFmpeg(t, []string{"-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-t", "4",
		"-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "30"}, ts.srtURL("publish:live/pass"))
	ts.logs.WaitLog(t, 20*time.Second, "path=live/pass", "-bf 0")
	if lines := ts.logs.Lines("video transcoded"); len(lines) != 0 {
		t.Errorf("transcoded with video: passthrough: %q", lines)
	}
}

// decodeH264 has ffprobe decode the pictures; it returns how many decoded
// and the size of the first.
func decodeH264(t *testing.T, aus []whepclient.AccessUnit) (int, string) {
	t.Helper()
	return decodeAnnexB(t, aus, "h264")
}

// decodeAnnexB is decodeH264 for the raw format ffprobe names (h264,
// hevc).
func decodeAnnexB(t *testing.T, aus []whepclient.AccessUnit, format string) (int, string) {
	t.Helper()
	var buf bytes.Buffer
	for _, au := range aus {
		for _, n := range au.NALUs {
			buf.Write([]byte{0, 0, 0, 1})
			buf.Write(n)
		}
	}
	file := filepath.Join(t.TempDir(), "viewer."+format)
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ffprobe", "-v", "error", "-f", format, "-show_entries", "frame=width,height",
		"-of", "csv=p=0", file).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	// Side-data rows come out as bare commas.
	var sizes []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.Trim(l, ", "); l != "" {
			sizes = append(sizes, l)
		}
	}
	if len(sizes) == 0 {
		return 0, ""
	}
	return len(sizes), sizes[0]
}

func ingestPath(ts *testServer, path string) (ingest.PathStats, bool) {
	for _, p := range ts.ingest.Stats() {
		if p.Path == path {
			return p, true
		}
	}
	return ingest.PathStats{}, false
}
