package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// testServer is a real srtwhep built from this module, publishing a real
// ffmpeg stream over SRT, all on loopback.
type testServer struct {
	WHEP, Metrics string
	PID           int
	ClipKbps      float64 // the clip's H.264 bitrate, measured from its bytes
}

const clipSeconds = 4

func startTestServer(t *testing.T) *testServer {
	t.Helper()
	for _, tool := range []string{"ffmpeg", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: %v (install ffmpeg with apt-get install ffmpeg; Go from go.dev)", tool, err)
		}
	}
	dir := t.TempDir()
	bin := buildServer(t, dir)
	clip, kbps := makeClip(t, dir)

	srtPort, httpPort, mediaPort, metricsPort := freeUDP(t), freeTCP(t), freeUDP(t), freeTCP(t)
	cfg := fmt.Sprintf(`logLevel: warn
srt:
  listen: "127.0.0.1:%d"
http:
  listen: "127.0.0.1:%d"
webrtc:
  listenIP: "127.0.0.1"
  udpPort: %d
  tcpPort: 0
metrics:
  listen: "127.0.0.1:%d"
readers:
  maxCPUPercent: 0
`, srtPort, httpPort, mediaPort, metricsPort)
	cfgFile := filepath.Join(dir, "srtwhep.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startProcess(t, "srtwhep", bin, "-config", cfgFile)
	waitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/readyz", httpPort), 200, 20*time.Second)

	// Several encoder passes are packed in one file; -stream_loop keeps it
	// going for as long as the test needs, as make bench does.
	startProcess(t, "ffmpeg", "ffmpeg", "-hide_banner", "-loglevel", "error", "-re", "-stream_loop", "-1",
		"-i", clip, "-c", "copy", "-f", "mpegts",
		fmt.Sprintf("srt://127.0.0.1:%d?streamid=publish:live/bench&pkt_size=1316", srtPort))
	whep := fmt.Sprintf("http://127.0.0.1:%d/live/bench/whep", httpPort)
	// The WHEP endpoint answers 404 until the publisher's first IDR has
	// reached the hub; an OPTIONS does not create a session.
	waitPublished(t, whep, 20*time.Second)
	return &testServer{WHEP: whep, Metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort), PID: srv.Process.Pid, ClipKbps: kbps}
}

var buildOnce = struct {
	sync.Mutex
	path string
}{}

func buildServer(t *testing.T, dir string) string {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || len(bytes.TrimSpace(gomod)) == 0 {
		t.Fatalf("go env GOMOD: %v (run the tests inside the module)", err)
	}
	bin := filepath.Join(dir, "srtwhep")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/srtwhep")
	cmd.Dir = filepath.Dir(string(bytes.TrimSpace(gomod)))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the server (needs libsrt-openssl-dev: make deps MODE=build): %v\n%s", err, out)
	}
	return bin
}

// makeClip encodes the bench clip's format (1280x720@30, ~2.5 Mbit/s, GOP
// 60, no B-frames) and returns it with its video bitrate, measured from
// the elementary stream's size.
func makeClip(t *testing.T, dir string) (string, float64) {
	t.Helper()
	ts := filepath.Join(dir, "clip.ts")
	run := func(args ...string) {
		out, err := exec.Command("ffmpeg", append([]string{"-hide_banner", "-loglevel", "error", "-y"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ffmpeg %s: %v (needs libx264: apt-get install ffmpeg)\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=1280x720:rate=30:duration=%d", clipSeconds),
		"-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-b:v", "2500k", "-maxrate", "2500k",
		"-bufsize", "5000k", "-g", "60", "-bf", "0", "-f", "mpegts", ts)
	es := filepath.Join(dir, "clip.h264")
	run("-i", ts, "-c", "copy", "-f", "h264", es)
	fi, err := os.Stat(es)
	if err != nil {
		t.Fatal(err)
	}
	return ts, float64(fi.Size()) * 8 / clipSeconds / 1000
}

func startProcess(t *testing.T, name, bin string, args ...string) *exec.Cmd {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, out.String())
		}
	})
	return cmd
}

func freeTCP(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func freeUDP(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

func waitHTTP(t *testing.T, url string, want int, limit time.Duration) {
	t.Helper()
	c := &http.Client{Timeout: time.Second}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := "no answer"
	for time.Now().Before(deadline) {
		if resp, err := c.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		<-tick.C
	}
	t.Fatalf("%s did not answer %d within %s (last: %s)", url, want, limit, last)
}

// waitPublished opens one WHEP session per round until media flows: the
// endpoint answers 404 until the publisher's first IDR reached the hub.
func waitPublished(t *testing.T, whep string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for ; time.Now().Before(deadline); <-tick.C {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		pool, err := NewPool(Config{URL: whep, ConnectTimeout: 5 * time.Second})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		added, _ := pool.Grow(ctx, 1, 1)
		flowing := added == 1 && pool.WaitFlowing(ctx, 5*time.Second) == 0
		if fails, _ := pool.Failures(); len(fails) > 0 {
			lastErr = fmt.Errorf("%v", fails)
		}
		_ = pool.Close()
		cancel()
		if flowing {
			return
		}
	}
	t.Fatalf("no media on %s within %s: %v", whep, limit, lastErr)
}
