package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/config"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/srt"
	"github.com/srtwhep/srtwhep/pkg/whep"
)

func TestMain(m *testing.M) {
	testkit.Main(m, func() {
		if _, err := exec.LookPath("ffmpeg"); err != nil {
			fmt.Fprintln(os.Stderr, "ffmpeg not found: run `make test` (it installs it) or `apt-get install -y ffmpeg`")
			os.Exit(1)
		}
		srt.Init()
	}, srt.Cleanup)
}

type testServer struct {
	*server
	logs *testkit.LogBuffer
}

// startServer runs the real server on loopback with ephemeral ports.
func startServer(t *testing.T, mutate func(*config.Config), whepOpts ...func(*whep.Config, *plane.Config)) *testServer {
	t.Helper()
	return runTestServer(t, loopbackConfig(mutate), whepOpts...)
}

// loopbackConfig is the defaults with every listener on an ephemeral
// loopback port, no metrics listener and no automatic CPU limit, then
// mutate.
func loopbackConfig(mutate func(*config.Config)) *config.Config {
	cfg := config.Default()
	cfg.SRT.Listen = "127.0.0.1:0"
	cfg.HTTP.Listen = "127.0.0.1:0"
	cfg.WebRTC.ListenIP = "127.0.0.1"
	cfg.WebRTC.UDPPort = 0
	cfg.WebRTC.TCPPort = 0
	cfg.Metrics.Listen = ""
	cfg.API.Listen = "127.0.0.1:0"
	// The machine running tests is shared and noisy; tests of the
	// automatic limit turn it back on with a figure of their own.
	cfg.Readers.MaxCPUPercent = 0
	// Every test posts from 127.0.0.1, many more often than one viewer
	// would; the offer bucket has tests of its own (pkg/whep,
	// internal/hostile TestOfferFlood, TestCountersMove).
	cfg.HTTP.OfferRate, cfg.HTTP.OfferBurst = 1000, 1000
	if mutate != nil {
		mutate(cfg)
	}
	return cfg
}

// binaryConfig is loopbackConfig with the metrics listener on an
// ephemeral loopback port too, as the YAML file of a real srtwhep binary
// (testkit.StartServer). Tests set what they need (the media plane,
// pprof) on the config struct, so a key that is renamed or moved fails
// to compile instead of silently not applying.
func binaryConfig(t *testing.T, mutate func(*config.Config)) string {
	t.Helper()
	cfg := loopbackConfig(func(c *config.Config) {
		c.Metrics.Listen = "127.0.0.1:0"
		if mutate != nil {
			mutate(c)
		}
	})
	if err := cfg.Validate(); err != nil {
		t.Fatalf("test config: %v", err)
	}
	out, err := cfg.Dump()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func (ts *testServer) srtURL(streamid string) string {
	return fmt.Sprintf("srt://%s?streamid=%s&pkt_size=1316", ts.srt.Addr().String(), streamid)
}

func (ts *testServer) httpURL(path string) string {
	return "http://" + ts.addrs.Load().HTTP + path
}

// apiURL is the control API's own listener with path appended.
func (ts *testServer) apiURL(path string) string {
	return "http://" + ts.addrs.Load().API + path
}

// liveX264Args encode the brief's reference stream live: 30 fps, no
// B-frames, a 2-second GOP, 2.5 Mbit/s (libx264 ultrafast zerolatency).
// For a test that needs the encoder itself (other encoder options, a
// second input); the others take x264Args.
func liveX264Args(size string, extra ...string) []string {
	args := []string{"-re", "-f", "lavfi", "-i", "testsrc2=size=" + size + ":rate=30",
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency",
		"-bf", "0", "-g", "60", "-b:v", "2500k"}
	return append(args, extra...)
}

// x264Args is the same stream played from a clip that liveX264Args
// encoded once per size and test binary (testkit.MakeClip), in real time
// and in a loop (testkit.LoopArgs): make test runs some 60 such
// publishers. The clip is 3 GOPs, so every loop starts at an IDR. extra
// are output options (-t). A clip that cannot be made panics: x264Args has
// no test to fail, and the panic fails the one that asked.
func x264Args(size string, extra ...string) []string {
	clip, err := testkit.MakeClip(append(liveX264Args(size)[1:], "-frames:v", "180")...)
	if err != nil {
		panic(err)
	}
	return append(testkit.LoopArgs(clip), extra...)
}

// startFFmpeg runs a real ffmpeg with input args, into MPEG-TS at output,
// until the test ends (or it exits by itself).
func startFFmpeg(t *testing.T, args []string, output string) *testkit.Process {
	t.Helper()
	return testkit.StartFFmpeg(t, append(args, "-f", "mpegts", output)...)
}

func (ts *testServer) waitPublisher(t *testing.T, path string) {
	t.Helper()
	testkit.WaitFor(t, 15*time.Second, "publisher on "+path, func() bool {
		for _, p := range ts.hub.Paths() {
			if p.Name == path && p.Publisher && p.FramesIn > 0 {
				return true
			}
		}
		return false
	})
}

// publishing reports whether a publisher is connected to path.
func (ts *testServer) publishing(path string) bool {
	for _, p := range ts.ingest.Stats() {
		if p.Path == path && p.Publisher != nil {
			return true
		}
	}
	return false
}

func (ts *testServer) framesIn(path string) uint64 {
	for _, p := range ts.hub.Paths() {
		if p.Name == path {
			return p.FramesIn
		}
	}
	return 0
}

// viewer is a real pion WHEP client that records every access unit and,
// when it offers audio, every audio packet.
type viewer struct {
	*whepclient.Session
	mu    sync.Mutex
	aus   []whepclient.AccessUnit
	audio []whepclient.AudioPacket
}

// snapshot copies what the viewer has received so far.
func (v *viewer) snapshot() ([]whepclient.AccessUnit, []whepclient.AudioPacket) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]whepclient.AccessUnit(nil), v.aus...), append([]whepclient.AudioPacket(nil), v.audio...)
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

// dialViewer connects a decoding viewer; opts adjust its options (Audio,
// say) before it dials.
func dialViewer(t *testing.T, ts *testServer, path string, opts ...func(*whepclient.Options)) *viewer {
	t.Helper()
	v, err := connectViewer(ts, path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

// connectViewer is dialViewer for callers that record a refusal instead
// of failing on it (a *whepclient.HTTPError in the chain); the caller
// closes the viewer.
func connectViewer(ts *testServer, path string, opts ...func(*whepclient.Options)) (*viewer, error) {
	v := &viewer{}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	o := whepclient.Options{
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
		OnAudioPacket: func(p whepclient.AudioPacket) {
			v.mu.Lock()
			v.audio = append(v.audio, p)
			v.mu.Unlock()
		},
		SettingEngine: testkit.LoopbackOnly,
	}
	for _, opt := range opts {
		opt(&o)
	}
	sess, err := whepclient.Dial(ctx, ts.httpURL("/"+path+"/whep"), o)
	if err != nil {
		return nil, fmt.Errorf("WHEP dial %s: %w", path, err)
	}
	v.Session = sess
	if err := sess.WaitConnected(ctx); err != nil {
		sess.Close()
		return nil, fmt.Errorf("viewer did not connect: %w", err)
	}
	return v, nil
}

func (v *viewer) waitUnits(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	testkit.WaitFor(t, timeout, fmt.Sprintf("%d access units", n), func() bool { return v.count() >= n })
}

// waitLive waits until v has n pictures past its catch-up burst
// (liveUnits), the window its frame rate is judged over.
func (v *viewer) waitLive(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	testkit.WaitFor(t, timeout, fmt.Sprintf("%d live access units", n), func() bool { return len(liveUnits(v.units())) >= n })
}

func sessionID(v *viewer) string {
	u := v.SessionURL()
	return u[strings.LastIndex(u, "/")+1:]
}

// h264Only is the codec list of a viewer that can play nothing but
// constrained-baseline H.264, for tests that only need an offer parsed.
var h264Only = []webrtc.RTPCodecParameters{{
	RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeH264, ClockRate: 90000,
		SDPFmtpLine: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"},
	PayloadType: 102,
}}

// offerSDP makes a real recvonly H.264 offer with pion.
func offerSDP(t *testing.T) string {
	t.Helper()
	return testkit.Offer(t, testkit.OfferOptions{Codecs: h264Only}).SDP
}
