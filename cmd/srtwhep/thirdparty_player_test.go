package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// The third-party WHEP players that play in make test, both MIT, both
// from npm, pinned with everything they pull in by
// testdata/thirdparty/package-lock.json (versions and sha512 integrity):
//   - medooze's whip-whep 1.2.0, whose whep.js is a browser-ready ES
//     module with no imports, served as is;
//   - Eyevinn's @eyevinn/webrtc-player 0.13.0, which ships CommonJS only
//     (it requires events and two more Eyevinn packages), bundled once per
//     install into one ES module by esbuild 0.25.12 (also pinned there).
//
// Nothing of theirs is copied into the repository.
const thirdPartyDir = "testdata/thirdparty"

// thirdPartyPlayer is one player: the files it needs and the module
// script that drives it through its own API. The script gets tp.whepURL,
// reports the promise of its start to tp.started and sets tp.stop to the
// player's own way of ending the session.
type thirdPartyPlayer struct {
	sub     string // the subtest's name
	name    string // npm package@version, as printed
	files   map[string]string
	script  string
	howStop string
}

var thirdPartyPlayers = []thirdPartyPlayer{{
	sub:   "whip-whep",
	name:  "whip-whep@1.2.0",
	files: map[string]string{"/npm/whep.js": "node_modules/whip-whep/whep.js"},
	// The RTCPeerConnection is the page's, as in the player's README:
	// recvonly audio and video, max-bundle; no ICE servers.
	script: `import { WHEPClient } from "/npm/whep.js";
const v = document.getElementById("v");
const ms = new MediaStream();
v.srcObject = ms;
const pc = new RTCPeerConnection({ bundlePolicy: "max-bundle", iceServers: [] });
pc.addTransceiver("audio", { direction: "recvonly" });
pc.addTransceiver("video", { direction: "recvonly" });
pc.ontrack = (e) => ms.addTrack(e.track);
const whep = new WHEPClient();
tp.started(whep.view(pc, tp.whepURL));
tp.stop = () => whep.stop();
`,
	howStop: "WHEPClient.stop()",
}, {
	sub:   "eyevinn-webrtc-player",
	name:  "@eyevinn/webrtc-player@0.13.0",
	files: map[string]string{"/npm/webrtc-player.js": eyevinnBundle},
	// The player makes its own RTCPeerConnection; its default ICE server
	// is a public STUN server, hence iceServers: [].
	script: `import { WebRTCPlayer } from "/npm/webrtc-player.js";
const player = new WebRTCPlayer({ video: document.getElementById("v"), type: "whep", iceServers: [] });
for (const ev of ["initial-connection-failed", "connect-error", "peer-connection-failed"]) player.on(ev, () => tp.fail(ev));
tp.started(player.load(new URL(tp.whepURL)));
tp.stop = () => player.unload();
`,
	howStop: "WebRTCPlayer.unload()",
}}

// eyevinnBundle is where the install step leaves the bundled player.
const eyevinnBundle = "webrtc-player.bundle.js"

// thirdPartyPage wraps a player's script. The classic script before it
// only observes: it records the player's requests (fetch) and its
// RTCPeerConnections, and window.tpStats() reads getStats() and the
// <video> element.
const thirdPartyPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>{{NAME}}</title>
<script>
const tp = window.tp = { view: "starting", error: "", errors: [], requests: [], pcs: [],
  whepURL: new URLSearchParams(location.search).get("whep"),
  fail(e) { if (tp.view !== "failed") { tp.view = "failed"; tp.error = String(e); } },
  started(p) { Promise.resolve(p).then(() => { if (tp.view === "starting") tp.view = "started"; }, (e) => tp.fail(e)); },
};
window.addEventListener("error", (e) => tp.errors.push("error: " + e.message));
window.addEventListener("unhandledrejection", (e) => tp.errors.push("unhandled rejection: " + e.reason));
const realFetch = window.fetch.bind(window);
window.fetch = async (input, init) => {
  const r = { method: (init && init.method) || "GET", status: 0, location: "" };
  if (r.method === "POST" && init && typeof init.body === "string" && init.body.startsWith("v=0")) {
    tp.offer = { sections: (init.body.match(/^m=/gm) || []).length, bundleOnly: /^a=bundle-only/m.test(init.body),
      bundle: (init.body.match(/^a=group:BUNDLE.*$/m) || [""])[0].trim() };
  }
  tp.requests.push(r);
  try {
    const res = await realFetch(input, init);
    r.status = res.status;
    r.location = res.headers.get("Location") || "";
    return res;
  } catch (e) {
    r.error = String(e);
    throw e;
  }
};
const RealPC = window.RTCPeerConnection;
window.RTCPeerConnection = class extends RealPC {
  constructor(...args) { super(...args); tp.pcs.push(this); }
};
window.tpStop = async () => {
  try { await tp.stop(); return "stopped"; } catch (e) { return "stop failed: " + e; }
};
window.tpStats = async () => {
  const v = document.getElementById("v"), pc = tp.pcs[tp.pcs.length - 1];
  const s = { view: tp.view, error: tp.error, errors: tp.errors, pcs: tp.pcs.length,
    connection: pc ? pc.connectionState : "", ice: pc ? pc.iceConnectionState : "",
    videoWidth: v.videoWidth, videoHeight: v.videoHeight, paused: v.paused, muted: v.muted,
    requests: tp.requests.map((r) => r.method + " " + (r.status || r.error)),
    session: (tp.requests.find((r) => r.method === "POST" && r.location) || {}).location || "",
    offer: tp.offer || null };
  if (!pc || pc.connectionState === "closed") return s;
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
</script></head>
<body>
<video id="v" autoplay playsinline></video>
<script type="module">
{{SCRIPT}}</script>
</body></html>
`

// thirdPartyStats is what window.tpStats() reports.
type thirdPartyStats struct {
	View        string   `json:"view"`
	Error       string   `json:"error"`
	Errors      []string `json:"errors"`
	PCs         int      `json:"pcs"`
	Connection  string   `json:"connection"`
	ICE         string   `json:"ice"`
	VideoWidth  int      `json:"videoWidth"`
	VideoHeight int      `json:"videoHeight"`
	Paused      bool     `json:"paused"`
	Muted       bool     `json:"muted"`
	Requests    []string `json:"requests"`
	Session     string   `json:"session"` // the Location of the POST
	Offer       *struct {
		Sections   int    `json:"sections"`   // m= lines
		BundleOnly bool   `json:"bundleOnly"` // any a=bundle-only
		Bundle     string `json:"bundle"`     // the a=group:BUNDLE line
	} `json:"offer"`

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

// TestThirdPartyPlayer plays a live path in headless Chromium with WHEP
// players the project did not write (see thirdPartyPlayers), one page
// each: the picture must decode at the published 1280x720, the sound (AAC
// published, Opus to the browser) must play with under 5 % of it
// concealed, and the player's own stop API must end the session on the
// server, with its DELETE answered.
//
// As in TestBrowserPlays the server runs in one network namespace and
// Chromium in another (Chromium gathers no loopback candidates); the
// pages are served on 127.0.0.1 inside Chromium's namespace, so the
// players talk to the WHEP endpoint cross-origin, as on a real site. One
// server, publisher and browser serve both players, one after the other.
//
// Not parallel: it runs Chromium and a 720p encoder.
func TestThirdPartyPlayer(t *testing.T) {
	requireNetns(t, chromiumPath, "ffmpeg")
	modules := npmThirdParty(t)
	start := time.Now()
	b := browserAndServer(t, "10.212.0", "")
	ctx, srv := b.ctx, b.srv
	publishWithSound(t, b.srvNS, srv.SRTURL("publish:live/tp1"))
	srv.WaitLog(t, 15*time.Second, "stream parameters", "path=live/tp1")

	mux := http.NewServeMux()
	for i, p := range thirdPartyPlayers {
		page := strings.NewReplacer("{{NAME}}", p.name, "{{SCRIPT}}", p.script).Replace(thirdPartyPage)
		mux.HandleFunc(fmt.Sprintf("GET /player%d", i), func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(page))
		})
		for route, file := range p.files {
			mux.HandleFunc("GET "+route, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
				http.ServeFile(w, r, filepath.Join(modules, file))
			})
		}
	}
	pages := httptest.NewUnstartedServer(mux)
	pages.Listener = listenTCPIn(t, b.cliNS)
	pages.Start()
	t.Cleanup(pages.Close)

	whepURL := "http://10.212.0.1:8889/live/tp1/whep"
	for i, p := range thirdPartyPlayers {
		t.Run(p.sub, func(t *testing.T) {
			playThirdParty(t, ctx, srv, p, fmt.Sprintf("%s/player%d?whep=%s", pages.URL, i, url.QueryEscape(whepURL)))
		})
	}
	t.Logf("%d players in %v from setup to the last stop", len(thirdPartyPlayers), time.Since(start).Round(time.Millisecond))
}

// playThirdParty opens one player's page in the browser's tab, checks
// what it plays and ends the session through the player.
func playThirdParty(t *testing.T, ctx context.Context, srv *testkit.Server, p thirdPartyPlayer, pageURL string) {
	navigated := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
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
			t.Fatalf("the player failed: %s (requests %v, page errors %v)", s.Error, s.Requests, s.Errors)
		}
		return s
	}

	var st thirdPartyStats
	defer func() {
		if t.Failed() {
			t.Logf("the page's last report: %+v", st)
		}
	}()
	testkit.WaitFor(t, 15*time.Second, "the player to play at 1280x720 with sound", func() bool {
		st = poll()
		return st.VideoWidth == 1280 && st.VideoHeight == 720 && st.FramesDecoded > 0 && st.TotalSamplesReceived > 0
	})
	firstFrame := time.Since(navigated)
	s0 := st
	testkit.WaitFor(t, 5*time.Second, "60 more frames", func() bool {
		st = poll()
		return st.FramesDecoded-s0.FramesDecoded >= 60
	})
	// The sound's window starts once the start (the jitter buffer filling
	// up, on a busy machine some concealment) is over: 3 s of steady play.
	a0 := st
	testkit.WaitFor(t, 10*time.Second, "3 s of sound", func() bool {
		st = poll()
		return st.TotalSamplesReceived-a0.TotalSamplesReceived >= 3*48000
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
	samples, concealed := st.TotalSamplesReceived-a0.TotalSamplesReceived, st.ConcealedSamples-a0.ConcealedSamples
	pct := 100 * float64(concealed) / float64(samples)
	if pct >= 5 {
		t.Errorf("audio: %d of %d samples concealed, want < 5 %%", concealed, samples)
	}
	msg := fmt.Sprintf("browser: third-party player %s: %d frames decoded at %dx%d (%s), first frame %v after navigation; audio %d packets, %d samples in the last window, %.2f %% concealed (%s); ICE %s",
		p.name, st.FramesDecoded, st.FrameWidth, st.FrameHeight, st.VideoCodec,
		firstFrame.Round(time.Millisecond), st.AudioPackets, samples, pct, st.AudioCodec, st.ICE)
	if o := st.Offer; o != nil {
		t.Logf("the player's offer: %d media sections, %q, bundle-only: %v", o.Sections, o.Bundle, o.BundleOnly)
	}
	session := st.Session[strings.LastIndexByte(st.Session, '/')+1:]
	if session == "" {
		t.Fatalf("no Location on the player's POST (requests %v)", st.Requests)
	}

	// The player's own stop, which sends DELETE to the session URL the
	// server handed out in Location.
	stopped, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.tpStop()`, chromedp.EvalAwaitPromise))
	if err != nil || stopped != "stopped" {
		t.Fatalf("the player's %s: %q, %v", p.howStop, stopped, err)
	}
	// The WHEP layer's line (it has the duration) says the session is
	// gone from the server, and why.
	closed := srv.WaitLog(t, 5*time.Second, "viewer closed", "session="+session, "duration=")
	st = poll()
	var del string
	for _, r := range st.Requests {
		if strings.HasPrefix(r, "DELETE ") {
			del = strings.TrimPrefix(r, "DELETE ")
		}
	}
	// whip-whep closes its RTCPeerConnection before it sends DELETE, so
	// the DTLS close_notify can end the session first ("peer connection
	// closed"); the DELETE that follows must still get 200, as a DELETE of
	// a session that ended moments ago does (RFC 9110 allows repeating it).
	reason := reasonOf(closed)
	switch {
	case reason != "deleted by the client" && reason != "peer connection closed":
		t.Errorf("the session ended with %q, want the player's DELETE or its DTLS close: %s", reason, closed)
	case del != "200":
		t.Errorf("the player's DELETE got %q, want 200 (all requests: %v; server: %s)", del, st.Requests, closed)
	}
	if len(st.Errors) > 0 {
		t.Logf("page errors: %v", st.Errors)
	}
	msg += fmt.Sprintf("; %s: %s, server: %q", p.howStop, strings.Join(st.Requests, ", "), reason)
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
