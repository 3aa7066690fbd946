package loadgen

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// testServer is a real srtwhep built from this module, publishing a real
// ffmpeg stream over SRT, all on loopback.
type testServer struct {
	WHEP, Metrics string
	PID           int
	ClipKbps      float64 // the clip's H.264 bitrate, measured from its bytes
	Srv           *testkit.Server
}

const clipSeconds = 4

func startTestServer(t *testing.T) *testServer {
	t.Helper()
	clip, kbps := makeClip(t, t.TempDir())
	// The machine running tests is shared and noisy: the automatic viewer
	// limit would refuse sessions the tests count on.
	srv := testkit.StartServer(t, testkit.BuildBinary(t, "github.com/srtwhep/srtwhep/cmd/srtwhep"), testkit.LoopbackConfig(`logLevel: warn
readers:
  maxCPUPercent: 0
`))

	// Several encoder passes are packed in one file; -stream_loop keeps it
	// going for as long as the test needs, as make bench does.
	testkit.StartFFmpeg(t, "-re", "-stream_loop", "-1", "-i", clip, "-c", "copy", "-f", "mpegts",
		srv.SRTURL("publish:live/bench"))
	whep := srv.URL("/live/bench/whep")
	waitPublished(t, whep)
	return &testServer{WHEP: whep, Metrics: "http://" + srv.Addrs.Metrics + "/metrics", PID: srv.Cmd.Process.Pid, ClipKbps: kbps,
		Srv: srv}
}

// makeClip encodes the bench clip's format (1280x720@30, ~2.5 Mbit/s, GOP
// 60, no B-frames, AAC 128 kbit/s stereo at 44.1 kHz, which the server
// transcodes to Opus) and returns it with its video bitrate, measured from
// the elementary stream's size.
func makeClip(t *testing.T, dir string) (string, float64) {
	t.Helper()
	ts := filepath.Join(dir, "clip.ts")
	testkit.FFmpeg(t, "-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=1280x720:rate=30:duration=%d", clipSeconds),
		"-f", "lavfi", "-i", fmt.Sprintf("sine=frequency=1000:sample_rate=44100:duration=%d", clipSeconds),
		"-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-b:v", "2500k", "-maxrate", "2500k",
		"-bufsize", "5000k", "-g", "60", "-bf", "0", "-c:a", "aac", "-b:a", "128k", "-ac", "2", "-f", "mpegts", ts)
	es := filepath.Join(dir, "clip.h264")
	testkit.FFmpeg(t, "-i", ts, "-map", "0:v", "-c", "copy", "-f", "h264", es)
	fi, err := os.Stat(es)
	if err != nil {
		t.Fatal(err)
	}
	return ts, float64(fi.Size()) * 8 / clipSeconds / 1000
}

// waitPublished waits until a session receives media: the endpoint answers
// 404 until the publisher's first IDR has reached the hub, and only a real
// session shows that media flows.
func waitPublished(t *testing.T, whep string) {
	t.Helper()
	var lastErr error
	// WaitFor ends a failing test with Goexit, which runs this.
	defer func() {
		if t.Failed() {
			t.Logf("last probe of %s: %v", whep, lastErr)
		}
	}()
	testkit.WaitFor(t, 30*time.Second, "media on "+whep, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		pool, err := NewPool(Config{URL: whep, ConnectTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		added, _ := pool.Grow(ctx, 1, 1)
		flowing := added == 1 && pool.WaitFlowing(ctx, 5*time.Second) == 0
		if fails, _ := pool.Failures(); len(fails) > 0 {
			lastErr = fmt.Errorf("%v", fails)
		}
		return flowing
	})
}
