package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/api"
)

// The shaped-link rig: the built-in player in headless Chromium behind a
// link of a given rate, as a viewer on a phone or a hotel Wi-Fi has.
// The server side of the browser's veth carries a tbf qdisc (this kernel
// has tbf, not netem), so every packet the server sends the browser
// queues there; the page's own getStats() says what the viewer saw.

// shapedLink is the server side of a browserSetup's veth.
type shapedLink struct {
	ns  *netns
	dev string
}

// set shapes the link to kbit kbit/s (0: unshaped) and returns when the
// qdisc is in place. The queue holds 200 ms at the rate, as a DSL line's
// or a cell's buffer does, and the bucket a few packets (at least two
// full datagrams, about 10 ms at the rate): a real bottleneck sends at
// its rate, not in bursts of a quarter of a second. So at 1 Mbit/s a
// frame of more than about 28 kB sent at once loses its tail, as a 720p
// keyframe of 30 kB does there.
func (l shapedLink) set(t *testing.T, kbit int) {
	t.Helper()
	if kbit == 0 {
		out, err := l.ns.command("tc", "qdisc", "del", "dev", l.dev, "root").CombinedOutput()
		// Deleting the default qdisc is refused: the link was unshaped.
		if err != nil && !strings.Contains(string(out), "Cannot delete qdisc with handle of zero") {
			t.Fatalf("tc qdisc del dev %s root: %v: %s", l.dev, err, out)
		}
		return
	}
	burst := max(3200, kbit*1000/8/100)
	l.ns.exec(t, "tc", "qdisc", "replace", "dev", l.dev, "root", "tbf",
		"rate", strconv.Itoa(kbit)+"kbit", "burst", strconv.Itoa(burst), "latency", "200ms")
}

// linkStats is one reading of the page's inbound streams (getStats()
// through the hook shapedHook installs) and of the frames it presented.
type linkStats struct {
	T  float64 `json:"t"`  // performance.now(), ms
	PC int     `json:"pc"` // which of the page's peer connections (-1: none)

	FramesDecoded        int     `json:"framesDecoded"`
	FrameWidth           int     `json:"frameWidth"`
	FrameHeight          int     `json:"frameHeight"`
	FreezeCount          int     `json:"freezeCount"`
	TotalFreezesDuration float64 `json:"totalFreezesDuration"` // s
	PacketsReceived      int     `json:"packetsReceived"`
	PacketsLost          int     `json:"packetsLost"`
	BytesReceived        int64   `json:"bytesReceived"`
	ConcealedSamples     int     `json:"concealedSamples"`
	TotalSamplesReceived int     `json:"totalSamplesReceived"`
	// Presented is the frames the video element presented so far.
	Presented int `json:"presented"`
}

// shapedHook runs in the page before the player's script: it keeps the
// page's peer connections (the player's are inside its function scope)
// so that window.__linkStats can read their getStats(), and records,
// from requestVideoFrameCallback, each change of the presented picture's
// size and each gap between presented frames longer than 150 ms, with
// the page's clock.
const shapedHook = `(() => {
  const Native = window.RTCPeerConnection;
  const pcs = [];
  window.RTCPeerConnection = class extends Native {
    constructor(...a) { super(...a); pcs.push(this); }
  };
  const rec = { presented: 0, last: 0, size: "", sizes: [], gaps: [] };
  window.__frames = rec;
  document.addEventListener("DOMContentLoaded", () => {
    const v = document.getElementById("v");
    // A new srcObject cancels pending frame callbacks: re-arm on loadstart.
    let armed = 0;
    const arm = () => {
      const me = ++armed;
      const f = (now, m) => {
        if (me !== armed) return;
        if (rec.last && now - rec.last > 150) rec.gaps.push([rec.last, now - rec.last]);
        const size = m.width + "x" + m.height;
        if (size !== rec.size) { rec.sizes.push([now, m.width, m.height]); rec.size = size; }
        rec.last = now;
        rec.presented++;
        v.requestVideoFrameCallback(f);
      };
      v.requestVideoFrameCallback(f);
    };
    arm();
    v.addEventListener("loadstart", arm);
  });
  window.__linkStats = async () => {
    const out = { t: performance.now(), pc: -1, presented: rec.presented };
    let pc = null;
    for (let i = pcs.length - 1; i >= 0; i--) {
      if (pcs[i].connectionState !== "closed") { pc = pcs[i]; out.pc = i; break; }
    }
    if (!pc) return out;
    const report = await pc.getStats();
    report.forEach((s) => {
      if (s.type !== "inbound-rtp") return;
      if (s.kind === "video") {
        for (const k of ["framesDecoded", "frameWidth", "frameHeight", "freezeCount", "totalFreezesDuration",
          "packetsReceived", "packetsLost", "bytesReceived"]) out[k] = s[k] || 0;
      } else if (s.kind === "audio") {
        out.concealedSamples = s.concealedSamples || 0;
        out.totalSamplesReceived = s.totalSamplesReceived || 0;
      }
    });
    return out;
  };
})()`

// shapedRig is the server, its publisher, the browser and the link
// between them.
type shapedRig struct {
	browserSetup
	link shapedLink
	host string // the server's address on the veth
}

// newShapedRig starts Chromium and the server (extra: more top-level
// YAML) in their namespaces on prefix's /24, with the control API on the
// server namespace's loopback, and a publisher of 720p30 x264 at about
// 2.5 Mbit/s with AAC sound on live/cam1.
func newShapedRig(t *testing.T, prefix, extra string) *shapedRig {
	t.Helper()
	requireNetns(t, "tc")
	r := &shapedRig{host: prefix + ".1"}
	r.browserSetup = browserAndServer(t, prefix, "api:\n  listen: \"127.0.0.1:0\"\n"+extra)
	r.link = shapedLink{ns: r.srvNS, dev: "s0"}
	if err := chromedp.Do(r.ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: shapedHook})
		return err
	})); err != nil {
		t.Fatalf("install the stats hook: %v", err)
	}
	publishClip(t, r.srvNS, r.srv.SRTURL("publish:live/cam1"))
	r.srv.WaitLog(t, 15*time.Second, "stream parameters", "path=live/cam1")
	return r
}

// publishClip publishes the rig's source to url from inside ns until the
// test ends: 8 s of the reference stream (testsrc2 720p30, x264
// ultrafast zerolatency, 2 s GOP, no B-frames, 2.5 Mbit/s, AAC sine)
// encoded once, then sent in a loop in real time with -c copy. The
// picture and the bitrate are those of the live encoder, at an eighth of
// its CPU (0.17 s against 1.36 s per 8 s here), which two cores shared
// with Chromium and a transcoder need more.
//
// The loop is seamless: 8 s is four GOPs and 375 AAC frames, and the
// sound is one frame (1024 samples) short of the picture because the
// encoder's priming frame makes it up; otherwise each turn's first audio
// frame would overlap the last one's and the server drop it.
func publishClip(t *testing.T, ns *netns, url string) {
	t.Helper()
	clip := filepath.Join(t.TempDir(), "cam1.ts")
	testkit.FFmpeg(t, "-hide_banner", "-loglevel", "error", "-nostdin",
		"-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30",
		"-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000:duration=7.978666",
		"-t", "8", "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-bf", "0", "-g", "60", "-b:v", "2500k",
		"-c:a", "aac", "-b:a", "128k", "-f", "mpegts", clip)
	testkit.StartProcess(t, "ffmpeg", ns.command("ffmpeg", "-hide_banner", "-loglevel", "warning", "-nostdin",
		"-re", "-stream_loop", "-1", "-i", clip, "-c", "copy", "-f", "mpegts", url))
}

// open loads the player page for live/cam1 (a fresh session) and waits
// until its video packets arrive (decoding them is what the tests
// measure).
func (r *shapedRig) open(t *testing.T) {
	t.Helper()
	if err := chromedp.Do(r.ctx, chromedp.EmulateViewport(960, 540), chromedp.Navigate("http://"+r.host+":8889/live/cam1")); err != nil {
		t.Fatalf("open the player page: %v", err)
	}
	testkit.WaitFor(t, 20*time.Second, "the page's video packets", func() bool {
		s := r.stats(t)
		return s.PC >= 0 && s.PacketsReceived > 0
	})
}

func (r *shapedRig) stats(t *testing.T) linkStats {
	t.Helper()
	ctx, cancel := context.WithTimeout(r.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[linkStats](`window.__linkStats()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("window.__linkStats(): %v", err)
	}
	return s
}

// frameRecord is what the hook recorded of the presented frames.
type frameRecord struct {
	Sizes [][3]float64 `json:"sizes"` // [page ms, width, height] at each change
	Gaps  [][2]float64 `json:"gaps"`  // [page ms of the frame before, ms without a frame]
	Last  float64      `json:"last"`  // page ms of the last frame presented (0: none yet)
}

func (r *shapedRig) frames(t *testing.T) frameRecord {
	t.Helper()
	rec, err := chromedp.Run(r.ctx, chromedp.Evaluate[frameRecord](`({sizes: window.__frames.sizes, gaps: window.__frames.gaps, last: window.__frames.last})`))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// pageNow is the page's clock, to place the link's changes among the
// frames it recorded.
func (r *shapedRig) pageNow(t *testing.T) float64 {
	t.Helper()
	now, err := chromedp.Run(r.ctx, chromedp.Evaluate[float64](`performance.now()`))
	if err != nil {
		t.Fatal(err)
	}
	return now
}

// paths reads GET /v1/paths from inside the server's namespace, where
// its control API listens.
func (r *shapedRig) paths(t *testing.T) []api.Path {
	t.Helper()
	var out struct{ Paths []api.Path }
	r.apiGet(t, "/v1/paths", &out)
	return out.Paths
}

func (r *shapedRig) apiGet(t *testing.T, path string, v any) {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
		var c net.Conn
		err := inNetns(r.srvNS, func() (err error) {
			c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp4", addr)
			return err
		})
		return c, err
	}}
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(r.srv.APIURL(path))
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// path is GET /v1/paths' live/cam1.
func (r *shapedRig) path(t *testing.T) api.Path {
	t.Helper()
	for _, p := range r.paths(t) {
		if p.Name == "live/cam1" {
			return p
		}
	}
	t.Fatal("live/cam1 not in GET /v1/paths")
	return api.Path{}
}

// pathSummary is what the server says of live/cam1's video.
func (r *shapedRig) pathSummary(t *testing.T) string {
	t.Helper()
	p := r.path(t)
	s := fmt.Sprintf("source %dx%d, %d frames dropped", p.Width, p.Height, p.Dropped)
	if p.Transcode != nil {
		s += fmt.Sprintf(", transcoded (%s)", p.Transcode.Reason)
	}
	for _, rd := range p.Renditions {
		s += fmt.Sprintf(", %s: %d viewers, running %v, %.1f %% CPU", rd.Name, rd.Viewers, rd.Running, rd.CPUPercent)
	}
	return s
}
