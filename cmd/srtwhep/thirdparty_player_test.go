package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/sys/unix"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// The third-party WHEP player that plays in make test: medooze's
// whip-whep (npm, MIT), whose whep.js is a browser-ready ES module with no
// imports. The version is pinned, and so is the file's content: npm
// checks the tarball against the registry's own hash, this checks that the
// registry still serves what was reviewed.
const (
	whipWhepPackage = "whip-whep"
	whipWhepVersion = "1.2.0"
	whipWhepFile    = "whep.js"
	whipWhepSHA256  = "7ebd73216be33f6aaaf97a7f532f209d51e189ad5b20ff3079fb8c94d54f1f03"
)

// thirdPartyPage is the whole page around the player: a <video>, the
// RTCPeerConnection the player's API takes (recvonly audio and video,
// max-bundle as its README shows, no ICE servers), and two hooks for the
// test, window.tpStats() and window.tpStop(). fetch is wrapped only to
// record what the player sent and what it got back (window.tpRequests).
const thirdPartyPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>whip-whep ` + whipWhepVersion + `</title></head>
<body>
<video id="v" autoplay playsinline></video>
<script type="module">
import { WHEPClient } from "/npm/whip-whep/whep.js";

const requests = window.tpRequests = [];
const realFetch = window.fetch.bind(window);
window.fetch = async (input, init) => {
  const r = { method: (init && init.method) || "GET", url: String(input), status: 0 };
  requests.push(r);
  try {
    const res = await realFetch(input, init);
    r.status = res.status;
    return res;
  } catch (e) {
    r.error = String(e);
    throw e;
  }
};

const state = window.tpState = { view: "starting", error: "" };
const whepURL = new URLSearchParams(location.search).get("whep");
const v = document.getElementById("v");
const ms = new MediaStream();
v.srcObject = ms;
const pc = window.tpPC = new RTCPeerConnection({ bundlePolicy: "max-bundle", iceServers: [] });
pc.addTransceiver("audio", { direction: "recvonly" });
pc.addTransceiver("video", { direction: "recvonly" });
pc.ontrack = (e) => ms.addTrack(e.track);

const whep = new WHEPClient();
whep.view(pc, whepURL).then(() => { state.view = "viewing"; }, (e) => { state.view = "failed"; state.error = String(e); });

window.tpStop = async () => {
  try { await whep.stop(); return "stopped"; } catch (e) { return "stop failed: " + e; }
};

window.tpStats = async () => {
  const s = { view: state.view, error: state.error, connection: pc.connectionState, ice: pc.iceConnectionState,
    videoWidth: v.videoWidth, videoHeight: v.videoHeight, paused: v.paused, muted: v.muted,
    requests: requests.map((r) => r.method + " " + (r.status || r.error)) };
  if (pc.connectionState === "closed") return s;
  const report = await pc.getStats();
  const codecs = {};
  report.forEach((r) => { if (r.type === "codec") codecs[r.id] = r.mimeType; });
  report.forEach((r) => {
    if (r.type !== "inbound-rtp") return;
    if (r.kind === "video") {
      Object.assign(s, { framesDecoded: r.framesDecoded || 0, frameWidth: r.frameWidth || 0, frameHeight: r.frameHeight || 0,
        videoPackets: r.packetsReceived || 0, videoCodec: codecs[r.codecId] || "" });
    } else if (r.kind === "audio") {
      Object.assign(s, { audioPackets: r.packetsReceived || 0, totalSamplesReceived: r.totalSamplesReceived || 0,
        concealedSamples: r.concealedSamples || 0, audioCodec: codecs[r.codecId] || "" });
    }
  });
  return s;
};
</script>
</body></html>
`

// thirdPartyStats is what window.tpStats() reports.
type thirdPartyStats struct {
	View        string   `json:"view"`
	Error       string   `json:"error"`
	Connection  string   `json:"connection"`
	ICE         string   `json:"ice"`
	VideoWidth  int      `json:"videoWidth"`
	VideoHeight int      `json:"videoHeight"`
	Paused      bool     `json:"paused"`
	Muted       bool     `json:"muted"`
	Requests    []string `json:"requests"`

	FramesDecoded int    `json:"framesDecoded"`
	FrameWidth    int    `json:"frameWidth"`
	FrameHeight   int    `json:"frameHeight"`
	VideoPackets  int    `json:"videoPackets"`
	VideoCodec    string `json:"videoCodec"`

	AudioPackets         int    `json:"audioPackets"`
	TotalSamplesReceived int    `json:"totalSamplesReceived"`
	ConcealedSamples     int    `json:"concealedSamples"`
	AudioCodec           string `json:"audioCodec"`
}

// TestThirdPartyPlayer plays a live path in headless Chromium with a WHEP
// player the project did not write, installed from npm at a pinned
// version: the page only hands it a RTCPeerConnection and the endpoint
// URL. The picture must decode at the published 1280x720, the sound
// (AAC published, Opus to the browser) must play with under 5 % of it
// concealed, and the player's own stop() must end the session on the
// server, with its DELETE answered.
//
// As in TestBrowserPlays the server runs in one network namespace and
// Chromium in another (Chromium gathers no loopback candidates); the page
// is served on 127.0.0.1 inside Chromium's namespace, so the player talks
// to the WHEP endpoint cross-origin, as on a real site.
//
// Not parallel: it runs Chromium and a 720p encoder.
func TestThirdPartyPlayer(t *testing.T) {
	requireNetns(t, chromiumPath, "ffmpeg")
	pkgDir := npmPackage(t, whipWhepPackage, whipWhepVersion)
	checkSHA256(t, filepath.Join(pkgDir, whipWhepFile), whipWhepSHA256)
	bin := testkit.BuildBinary(t, "./cmd/srtwhep")
	start := time.Now()

	srvNS, cliNS := newNetns(t, "srv"), newNetns(t, "cli")
	link(t, srvNS, "s0", "10.212.0.1/24", cliNS, "c0", "10.212.0.2/24")
	cliNS.ip(t, "route", "add", "default", "via", "10.212.0.1")
	ctx := newBrowser(t, cliNS)

	srv := serverInNetns(t, bin, srvNS, `srt:
  listen: "127.0.0.1:8890"
http:
  listen: "10.212.0.1:8889"
webrtc:
  listenIP: 10.212.0.1
  udpPort: 8189
  tcpPort: 8189
`+testkit.MediaPlaneYAML()+`metrics:
  listen: ""
`)
	testkit.StartProcess(t, "ffmpeg", srvNS.command("ffmpeg", "-hide_banner", "-loglevel", "warning", "-nostdin",
		"-re", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000",
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-bf", "0", "-g", "60", "-b:v", "2500k",
		"-c:a", "aac", "-b:a", "128k", "-f", "mpegts", srv.SRTURL("publish:live/tp1")))
	srv.WaitLog(t, 15*time.Second, "stream parameters", "path=live/tp1")

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(thirdPartyPage))
	})
	mux.Handle("GET /npm/whip-whep/", http.StripPrefix("/npm/whip-whep/", http.FileServer(http.Dir(pkgDir))))
	page := httptest.NewUnstartedServer(mux)
	page.Listener = listenTCPIn(t, cliNS)
	page.Start()
	t.Cleanup(page.Close)

	whepURL := "http://10.212.0.1:8889/live/tp1/whep"
	navigated := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(page.URL+"/?whep="+url.QueryEscape(whepURL))); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	poll := func() thirdPartyStats {
		t.Helper()
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		s, err := chromedp.Run(pctx, chromedp.Evaluate[thirdPartyStats](`window.tpStats ? window.tpStats() : {view: "not loaded"}`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("window.tpStats(): %v", err)
		}
		if s.View == "failed" {
			t.Fatalf("the player failed: %s (requests %v)\n%s", s.Error, s.Requests, srv.Log.String())
		}
		return s
	}

	var st thirdPartyStats
	testkit.WaitFor(t, 15*time.Second, "the player to play at 1280x720", func() bool {
		st = poll()
		return st.VideoWidth == 1280 && st.VideoHeight == 720 && st.FramesDecoded > 0 && st.TotalSamplesReceived > 0
	})
	firstFrame := time.Since(navigated)
	s0 := st
	testkit.WaitFor(t, 10*time.Second, "60 more frames and 3 s of sound", func() bool {
		st = poll()
		return st.FramesDecoded-s0.FramesDecoded >= 60 && st.TotalSamplesReceived-s0.TotalSamplesReceived >= 3*48000
	})
	if st.FrameWidth != 1280 || st.FrameHeight != 720 {
		t.Errorf("decoded frames are %dx%d, want 1280x720", st.FrameWidth, st.FrameHeight)
	}
	if !strings.EqualFold(st.VideoCodec, "video/H264") || !strings.EqualFold(st.AudioCodec, "audio/opus") {
		t.Errorf("codecs %q and %q, want video/H264 and audio/opus", st.VideoCodec, st.AudioCodec)
	}
	if st.Paused || st.Muted {
		t.Errorf("the video element is paused=%v muted=%v, want playing with sound", st.Paused, st.Muted)
	}
	samples, concealed := st.TotalSamplesReceived-s0.TotalSamplesReceived, st.ConcealedSamples-s0.ConcealedSamples
	pct := 100 * float64(concealed) / float64(samples)
	msg := fmt.Sprintf("browser: third-party player %s@%s: %d frames decoded at %dx%d (%s), first frame %v after navigation; audio %d packets, %d samples in the last window, %.2f %% concealed (%s); ICE %s",
		whipWhepPackage, whipWhepVersion, st.FramesDecoded, st.FrameWidth, st.FrameHeight, st.VideoCodec,
		firstFrame.Round(time.Millisecond), st.AudioPackets, samples, pct, st.AudioCodec, st.ICE)
	if pct >= 5 {
		t.Errorf("audio: %d of %d samples concealed, want < 5 %%", concealed, samples)
	}

	// The player's own stop(): it closes the RTCPeerConnection and sends
	// DELETE to the session URL the server handed out in Location.
	stopped, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.tpStop()`, chromedp.EvalAwaitPromise))
	if err != nil || stopped != "stopped" {
		t.Fatalf("the player's stop(): %q, %v", stopped, err)
	}
	// The WHEP layer's line (it has the duration) says the session is
	// gone from the server, and why.
	closed := srv.WaitLog(t, 5*time.Second, "viewer closed", "path=live/tp1", "duration=")
	st = poll()
	var del string
	for _, r := range st.Requests {
		if strings.HasPrefix(r, "DELETE ") {
			del = strings.TrimPrefix(r, "DELETE ")
		}
	}
	// whip-whep closes the RTCPeerConnection before it sends DELETE, so
	// the DTLS close_notify can end the session first ("peer connection
	// closed"); a server that then answers the DELETE with 404 (no such
	// session) rather than 200 is noted here, not failed: the player
	// ignores the answer and the session is gone either way.
	switch reason := reasonOf(closed); {
	case reason != "deleted by the client" && reason != "peer connection closed":
		t.Errorf("the session ended with %q, want the player's DELETE or its DTLS close: %s", reason, closed)
	case del == "200":
	case del == "404" && reason == "peer connection closed":
		t.Logf("note: the DELETE came after the DTLS close had ended the session, and got 404")
	default:
		t.Errorf("the player's DELETE got %q, want 200 (all requests: %v; server: %s)", del, st.Requests, closed)
	}
	msg += fmt.Sprintf("; stop(): %s, server: %q; %v from setup to stop", strings.Join(st.Requests, ", "), reasonOf(closed), time.Since(start).Round(time.Millisecond))
	t.Log(msg)
	fmt.Println(msg)
}

// reasonOf picks the reason="..." attribute out of a log line.
func reasonOf(line string) string {
	_, after, ok := strings.Cut(line, `reason="`)
	if !ok {
		return line
	}
	r, _, _ := strings.Cut(after, `"`)
	return r
}

// npmPackage returns the directory of name@version, installed with npm
// into the user's cache directory ($XDG_CACHE_HOME or ~/.cache, under
// srtwhep-npm/NAME@VERSION) once, so later runs skip npm altogether. The
// install goes to a fresh directory that is renamed into place only when
// complete, so an interrupted install is never mistaken for one.
func npmPackage(t *testing.T, name, version string) string {
	t.Helper()
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "srtwhep-npm", name+"@"+version)
	pkgDir := filepath.Join(dir, "node_modules", name)
	if installedVersion(pkgDir) == version {
		return pkgDir
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("npm not found: this test installs %s@%s from the npm registry; install Node.js with npm (Debian: `apt-get install -y nodejs npm`; scripts/deps.sh test checks for it)", name, version)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+name+"@"+version+"-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--ignore-scripts",
		"--no-update-notifier", "--loglevel=error", "--prefix", tmp, name+"@"+version)
	cmd.Dir = tmp
	cmd.WaitDelay = 5 * time.Second
	began := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (no answer within 2 min: is the npm registry reachable?)", ctx.Err())
		}
		t.Fatalf("npm install %s@%s: %v\n%s", name, version, err, out)
	}
	if got := installedVersion(filepath.Join(tmp, "node_modules", name)); got != version {
		t.Fatalf("npm install %s@%s installed version %q", name, version, got)
	}
	// A stale or partial cache entry (version mismatch above) goes; a
	// rename that still fails means a concurrent run won the race.
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil && installedVersion(pkgDir) != version {
		t.Fatalf("cache the npm install: %v", err)
	}
	t.Logf("npm install %s@%s into %s: %v", name, version, dir, time.Since(began).Round(time.Millisecond))
	return pkgDir
}

// installedVersion is the version in dir/package.json, "" if unreadable.
func installedVersion(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return ""
	}
	var p struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(b, &p) != nil {
		return ""
	}
	return p.Version
}

func checkSHA256(t *testing.T, file, want string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("%s has sha256 %s, want %s: the pinned npm package changed; review it and update the pin", file, got, want)
	}
}

// listenTCPIn opens a TCP listener on 127.0.0.1:0 inside ns, the same
// way listenUDPIn opens its socket: a locked thread visits ns for the
// call and comes back before it is unlocked.
func listenTCPIn(t *testing.T, ns *netns) net.Listener {
	t.Helper()
	home, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	defer home.Close()
	there, err := os.Open("/run/netns/" + ns.name)
	if err != nil {
		t.Fatal(err)
	}
	defer there.Close()
	type result struct {
		ln  net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(int(there.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("setns: %w", err)}
			return
		}
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err2 := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); err2 != nil {
			// Stuck in ns: exit locked so Go discards the thread.
			done <- result{ln, errors.Join(err, fmt.Errorf("setns back: %w", err2))}
			return
		}
		runtime.UnlockOSThread()
		done <- result{ln, err}
	}()
	r := <-done
	if r.err != nil {
		if r.ln != nil {
			r.ln.Close()
		}
		t.Fatalf("TCP listener inside netns %s: %v", ns.name, r.err)
	}
	return r.ln
}
