package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/config"
)

// TestCorePathWithSound is TestCorePath with sound: real ffmpeg pushes
// 720p30 with AAC; three real pion viewers start at an IDR with SPS and
// PPS, play every frame at 30 fps without a sequence gap, and hear Opus
// with contiguous sequence numbers.
func TestCorePathWithSound(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	args := liveX264Args("1280x720", "-c:a", "aac", "-ar", "48000", "-b:a", "96k")
	// The tone is the second input: inputs come before the encoders.
	args = append(append(args[:5:5], "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000"), args[5:]...)
	startFFmpeg(t, args, ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")

	var viewers []*viewer
	for range 3 {
		viewers = append(viewers, dialAudioViewer(t, ts, "live/cam1"))
	}
	for _, v := range viewers {
		testkit.WaitFor(t, 30*time.Second, "120 pictures and 4 s of sound", func() bool {
			aus, audio := v.snapshot()
			return len(aus) >= 120 && len(audio) >= 200
		})
	}
	for i, v := range viewers {
		name := "viewer " + string(rune('A'+i))
		aus, audio := v.snapshot()
		checkStartsWithIDR(t, name, aus)
		checkFullRate(t, name, v)
		if st := v.Stats(); st.Width != 1280 || st.Height != 720 {
			t.Errorf("%s: SPS says %dx%d, want 1280x720", name, st.Width, st.Height)
		}
		gaps := 0
		for j := 1; j < len(audio); j++ {
			if audio[j].SequenceNumber != audio[j-1].SequenceNumber+1 {
				gaps++
			}
		}
		if gaps != 0 {
			t.Errorf("%s: %d gaps in %d Opus packets", name, gaps, len(audio))
		}
		t.Logf("%s: %d pictures at %.1f fps, %d Opus packets", name, len(aus), liveFrameRate(aus), len(audio))
	}
	if datagrams, refused, _ := ts.plane.SocketStats(); datagrams == 0 || refused != 0 {
		t.Errorf("media plane socket: %d datagrams sent, %d refused; want some and none refused", datagrams, refused)
	}
}

// goroutineViewersEnv sets how many viewers TestGoroutinesPerViewer
// connects; the default keeps the test light on two cores.
const goroutineViewersEnv = "TEST_GOROUTINE_VIEWERS"

// goroutinesPerViewer is what one connected viewer costs, in goroutines
// of the server: none, since a fixed pool writes for every UDP viewer
// and the demultiplexer reads for all. One goroutine more per viewer is
// a leak, and fails.
const goroutinesPerViewer = 0

// TestGoroutinesPerViewer measures the real server's goroutines per
// connected viewer (its goroutine profile before and after N viewers
// connect) and requires the figure goroutinesPerViewer gives: a
// goroutine that a session starts and never ends shows here, long before
// it shows as memory.
//
// Not parallel: a measurement, taken with nothing else running.
func TestGoroutinesPerViewer(t *testing.T) {
	n := 20
	if s := os.Getenv(goroutineViewersEnv); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive count", goroutineViewersEnv, s)
		}
	}
	cfg := binaryConfig(t, func(c *config.Config) {
		c.Metrics.Pprof = true // the goroutine profile is the figure
	})
	srv := testkit.StartServer(t, testkit.BuildBinary(t, "./cmd/srtwhep"), cfg)
	proc, err := procfs.NewProc(srv.Cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	pprofBase := "http://" + srv.Addrs.Metrics
	testkit.StartFFmpeg(t, append(x264Args("320x240"), "-f", "mpegts", srv.SRTURL("publish:live/cam1"))...)
	srv.WaitLog(t, 15*time.Second, "publisher connected", "path=live/cam1")
	before := usageOf(t, proc, pprofBase)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Our own transport, emptied before measuring: an idle keep-alive
	// connection is a server goroutine that no viewer costs.
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	httpc := &http.Client{Timeout: 10 * time.Second, Transport: tr}
	var sessions []*whepclient.Session
	for i := range n {
		var s *whepclient.Session
		// The publisher's first IDR may still be on its way.
		testkit.WaitFor(t, 15*time.Second, fmt.Sprintf("viewer %d to be answered", i+1), func() bool {
			s, err = whepclient.Dial(ctx, srv.URL("/live/cam1/whep"), whepclient.Options{SettingEngine: testkit.LoopbackOnly, HTTPClient: httpc})
			return err == nil
		})
		t.Cleanup(func() { _ = s.Close() })
		sessions = append(sessions, s)
	}
	for i, s := range sessions {
		if err := s.WaitConnected(ctx); err != nil {
			t.Fatalf("viewer %d: %v", i+1, err)
		}
	}
	testkit.WaitFor(t, 20*time.Second, "media at every viewer", func() bool {
		for _, s := range sessions {
			if s.Stats().Packets == 0 {
				return false
			}
		}
		return true
	})
	tr.CloseIdleConnections()
	// Handshake goroutines end a moment after "connected", and the server
	// closes the HTTP connections a moment after we do: the figure is
	// awaited, not read once. Two goroutines of slack are such a
	// connection still closing; a leak of one per viewer is n more.
	want := goroutinesPerViewer * n
	var after serverUsage
	ok := pollEvery(15*time.Second, func() bool {
		after = usageOf(t, proc, pprofBase)
		return after.goroutines-before.goroutines <= want+2
	})
	per := float64(after.goroutines-before.goroutines) / float64(n)
	t.Logf("%d goroutines with no viewer, %d with %d connected viewers: %.2f per viewer (want %d); RSS %.1f → %.1f MiB",
		before.goroutines, after.goroutines, n, per, goroutinesPerViewer,
		float64(before.rss)/(1<<20), float64(after.rss)/(1<<20))
	if !ok {
		t.Errorf("%d goroutines for %d viewers (%.2f each), want %d each:\n%s",
			after.goroutines-before.goroutines, n, per, goroutinesPerViewer, topStacks(after.dump))
	}
	// Fewer than that means the viewers were not all served as sessions
	// of their own (or the figure above is stale): the count must still
	// measure what it claims to.
	if got := after.goroutines - before.goroutines; got < want-n/2 {
		t.Errorf("only %d goroutines for %d viewers, want %d (%d each): update goroutinesPerViewer",
			got, n, want, goroutinesPerViewer)
	}
}
