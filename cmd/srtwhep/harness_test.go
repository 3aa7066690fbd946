package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
	"go.uber.org/goleak"

	"github.com/srtwhep/srtwhep/pkg/config"
	"github.com/srtwhep/srtwhep/pkg/srt"
	"github.com/srtwhep/srtwhep/pkg/whep"
	"github.com/srtwhep/srtwhep/pkg/whepclient"
)

func TestMain(m *testing.M) {
	for _, tool := range []string{"ffmpeg"} {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Fprintf(os.Stderr, "%s not found: run `make test` (it installs it) or `apt-get install -y ffmpeg`\n", tool)
			os.Exit(1)
		}
	}
	srt.Init()
	code := m.Run()
	srt.Cleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutine leak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// logBuffer collects the server's log lines so tests can assert on the
// exact messages operators see.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// lines returns the log lines containing every one of the given substrings.
func (l *logBuffer) lines(subs ...string) []string {
	var out []string
	for _, line := range strings.Split(l.String(), "\n") {
		ok := true
		for _, s := range subs {
			if !strings.Contains(line, s) {
				ok = false
				break
			}
		}
		if ok && line != "" {
			out = append(out, line)
		}
	}
	return out
}

// waitLog waits until a line containing all subs is logged.
func (l *logBuffer) waitLog(t *testing.T, timeout time.Duration, subs ...string) string {
	t.Helper()
	var found string
	waitFor(t, timeout, fmt.Sprintf("log line with %q", subs), func() bool {
		if ls := l.lines(subs...); len(ls) > 0 {
			found = ls[0]
			return true
		}
		return false
	})
	return found
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type testServer struct {
	*server
	logs *logBuffer
}

// startServer runs the real server on loopback with ephemeral ports.
func startServer(t *testing.T, mutate func(*config.Config), whepOpts ...func(*whep.Config)) *testServer {
	t.Helper()
	cfg := config.Default()
	cfg.SRT.Listen = "127.0.0.1:0"
	cfg.HTTP.Listen = "127.0.0.1:0"
	cfg.WebRTC.ListenIP = "127.0.0.1"
	cfg.WebRTC.UDPPort = 0
	cfg.WebRTC.TCPPort = 0
	cfg.Metrics.Listen = ""
	// The machine running tests is shared and noisy; tests of the
	// automatic limit turn it back on with a figure of their own.
	cfg.Readers.MaxCPUPercent = 0
	if mutate != nil {
		mutate(cfg)
	}
	return runTestServer(t, cfg, whepOpts...)
}

func (ts *testServer) srtURL(streamid string) string {
	return fmt.Sprintf("srt://%s?streamid=%s&pkt_size=1316", ts.srt.Addr().String(), streamid)
}

func (ts *testServer) httpURL(path string) string {
	return "http://" + ts.httpAddr.Load().String() + path
}

// x264Args encode the brief's reference stream: 720p30, no B-frames, a
// 2-second GOP.
func x264Args(size string, extra ...string) []string {
	args := []string{"-re", "-f", "lavfi", "-i", "testsrc2=size=" + size + ":rate=30",
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency",
		"-bf", "0", "-g", "60", "-b:v", "2500k"}
	return append(args, extra...)
}

// ffmpeg runs a real ffmpeg until the test ends (or it exits by itself).
type ffmpegProc struct {
	cmd    *exec.Cmd
	stderr *logBuffer
	done   chan error
}

func startFFmpeg(t *testing.T, args []string, output string) *ffmpegProc {
	t.Helper()
	full := append([]string{"-hide_banner", "-loglevel", "warning", "-nostdin"}, args...)
	full = append(full, "-f", "mpegts", output)
	cmd := exec.Command("ffmpeg", full...)
	p := &ffmpegProc{cmd: cmd, stderr: &logBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start ffmpeg: %v", err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
	})
	return p
}

// wait returns ffmpeg's exit error, failing the test if it runs too long.
func (p *ffmpegProc) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(timeout):
		t.Fatalf("ffmpeg still running after %v; stderr: %s", timeout, p.stderr.String())
		return nil
	}
}

func (ts *testServer) waitPublisher(t *testing.T, path string) {
	t.Helper()
	waitFor(t, 15*time.Second, "publisher on "+path, func() bool {
		for _, p := range ts.hub.Paths() {
			if p.Name == path && p.Publisher && p.FramesIn > 0 {
				return true
			}
		}
		return false
	})
}

func (ts *testServer) framesIn(path string) uint64 {
	for _, p := range ts.hub.Paths() {
		if p.Name == path {
			return p.FramesIn
		}
	}
	return 0
}

// viewer is a real pion WHEP client that records every access unit.
type viewer struct {
	*whepclient.Session
	mu  sync.Mutex
	aus []whepclient.AccessUnit
}

func (v *viewer) units() []whepclient.AccessUnit {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]whepclient.AccessUnit(nil), v.aus...)
}

func (v *viewer) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.aus)
}

func loopbackOnly(se *webrtc.SettingEngine) {
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	se.SetIncludeLoopbackCandidate(true)
	se.SetInterfaceFilter(func(name string) bool { return name == "lo" })
}

func dialViewer(t *testing.T, ts *testServer, path string) *viewer {
	t.Helper()
	v := &viewer{}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	sess, err := whepclient.Dial(ctx, ts.httpURL("/"+path+"/whep"), whepclient.Options{
		Decode: true,
		OnAccessUnit: func(au whepclient.AccessUnit) {
			nalus := make([][]byte, len(au.NALUs))
			for i, n := range au.NALUs {
				nalus[i] = append([]byte(nil), n...)
			}
			au.NALUs = nalus
			v.mu.Lock()
			v.aus = append(v.aus, au)
			v.mu.Unlock()
		},
		SettingEngine: loopbackOnly,
	})
	if err != nil {
		t.Fatalf("WHEP dial %s: %v", path, err)
	}
	v.Session = sess
	t.Cleanup(func() { sess.Close() })
	if err := sess.WaitConnected(ctx); err != nil {
		t.Fatalf("viewer did not connect: %v", err)
	}
	return v
}

func (v *viewer) waitUnits(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, fmt.Sprintf("%d access units", n), func() bool { return v.count() >= n })
}

func sessionID(v *viewer) string {
	u := v.SessionURL()
	return u[strings.LastIndex(u, "/")+1:]
}

func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// offerSDP makes a real recvonly H.264 offer with pion, for tests that only
// need the server to parse one.
func offerSDP(t *testing.T) string {
	t.Helper()
	me := &webrtc.MediaEngine{}
	if err := me.RegisterCodec(webrtc.RTPCodecParameters{
		RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeH264, ClockRate: 90000,
			SDPFmtpLine: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"},
		PayloadType: 102,
	}, webrtc.RTPCodecTypeVideo); err != nil {
		t.Fatal(err)
	}
	se := webrtc.SettingEngine{}
	loopbackOnly(&se)
	pc, err := webrtc.NewAPI(webrtc.WithMediaEngine(me), webrtc.WithSettingEngine(se)).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if _, err := pc.AddTransceiverFromKind(webrtc.RTPCodecTypeVideo,
		webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionRecvonly}); err != nil {
		t.Fatal(err)
	}
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		t.Fatal(err)
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(offer); err != nil {
		t.Fatal(err)
	}
	<-gathered
	return pc.LocalDescription().SDP
}
