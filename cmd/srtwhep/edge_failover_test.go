package main

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// The edge failover tests: what an edge's viewers see when something
// upstream of them, or their edge itself, dies.

// TestEdgeOriginPublisherRestart: the origin's publisher is SIGKILLed (a
// crashed encoder) and a new one starts on the same path 2 s later. The
// edge's viewers go on in the same WHEP session, whether the origin kept
// the edge's SRT read through its publisher grace or the edge had to
// redial: from the new stream's first IDR, with contiguous RTP, at 30 fps
// afterwards. A viewer of another path pulled over the same edge keeps its
// 30 fps throughout.
func TestEdgeOriginPublisherRestart(t *testing.T) {
	t.Parallel()
	const path = "live/cam1"
	origin := startServer(t, nil)
	first := startFFmpeg(t, x264Args("640x360"), origin.srtURL("publish:"+path))
	startFFmpeg(t, x264Args("320x240"), origin.srtURL("publish:live/other"))
	origin.waitPublisher(t, path)
	origin.waitPublisher(t, "live/other")
	edge := edgeTo(t, "srt://"+origin.srt.Addr().String(), nil)

	bystander := dialViewer(t, edge, "live/other")
	a := dialViewer(t, edge, path)
	b := dialViewer(t, edge, path)
	for _, v := range []*viewer{a, b, bystander} {
		v.waitUnits(t, 90, 20*time.Second)
	}

	killedAt := time.Now()
	if err := first.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill ffmpeg: %v", err)
	}
	// An encoder restarting after a crash, 2 s later.
	select {
	case <-time.After(time.Until(killedAt.Add(2 * time.Second))):
	case <-t.Context().Done():
		return
	}
	startFFmpeg(t, x264Args("320x240"), origin.srtURL("publish:"+path))
	for _, v := range []*viewer{a, b} {
		waitSize(t, v, 320, 240, 20*time.Second)
	}
	t.Logf("edge viewers see the new publisher %v after the kill", time.Since(killedAt).Round(time.Millisecond))
	// Three seconds of the new stream: the window the frame rate is
	// judged over.
	for _, v := range []*viewer{a, b} {
		v.waitUnits(t, v.count()+90, 20*time.Second)
	}

	for _, c := range []struct {
		name string
		v    *viewer
	}{{"edge viewer A", a}, {"edge viewer B", b}} {
		checkKept(t, edge, c.name, c.v)
		resume := checkContinued(t, c.name, c.v)
		aus := c.v.units()
		// The RTP gap is the wall time between the last picture sent and
		// the first one after it: the origin places the new publisher's
		// stream by the time that passed. The last old picture's own
		// arrival is no measure: the client completes a picture when the
		// next one starts.
		t.Logf("%s: gap from the last picture of the old publisher to the first of the new one: %.3f s (RTP time); the first new picture arrived %v after the kill",
			c.name, float64(aus[resume].RTPTimestamp-aus[resume-1].RTPTimestamp)/90000,
			aus[resume].Received.Sub(killedAt).Round(time.Millisecond))
		checkFullRateSince(t, c.name+" after the resume", aus[resume:])
	}
	if n := len(edge.logs.Lines("viewer opened", "path="+path)); n != 2 {
		t.Errorf("%d WHEP sessions opened on the edge, want the original 2 (no new POST)", n)
	}
	// The origin keeps the edge's SRT read through its publisher grace and
	// sends it null packets meanwhile, so the edge has no reason to
	// redial: a redial would cost the viewers a back-off on top of the gap.
	pulls := len(edge.logs.Lines("source connected", "path="+path))
	kept := len(origin.logs.Lines("reader continues with a new publisher", "path="+path))
	t.Logf("the edge connected to the origin %d time(s) for %s; the origin continued %d SRT reader(s) with the new publisher", pulls, path, kept)
	if pulls != 1 || kept != 1 {
		t.Errorf("the edge connected %d times and the origin continued %d readers, want the one pull kept through the gap (lines: %q)",
			pulls, kept, edge.logs.Lines("source", "path="+path))
	}
	bystander.waitLive(t, 90, 20*time.Second)
	checkFullRate(t, "edge viewer of live/other", bystander)
}

// checkFullRateSince asserts that aus, a window of a viewer's pictures,
// has no missing picture and plays at the source's 30 fps.
func checkFullRateSince(t *testing.T, name string, aus []whepclient.AccessUnit) {
	t.Helper()
	for i := 1; i < len(aus); i++ {
		if d := aus[i].RTPTimestamp - aus[i-1].RTPTimestamp; d > frameTicks+frameTicks/2 {
			t.Errorf("%s lost frames: timestamp step %d at access unit %d of the window", name, d, i)
			break
		}
	}
	if fps := liveFrameRate(aus); fps < 29 || fps > 31 {
		t.Errorf("%s played at %.1f fps over %d pictures, want 30", name, fps, len(aus))
	}
}

// The edge-failover topology: everything server-side (origin, two edges,
// the publisher, the entry point, a pion viewer) in srv, headless
// Chromium in cli, which reaches srv's 10.214.0.1 over a veth pair.
const (
	failoverNet   = "10.214.0" // see browserNetns
	failoverSrvIP = failoverNet + ".1"
	failoverCliIP = failoverNet + ".2"
	failoverEntry = failoverSrvIP + ":8880"
	failoverToken = "failover-api-token"
)

// failoverEdgeConfig is edge i's config: pulled from the origin's SRT
// listener on srv's loopback, its own HTTP and media ports on srv's
// address, http.publicURL naming that address, and the entry point
// trusted to say who its clients are.
func failoverEdgeConfig(i int) string {
	httpAddr := fmt.Sprintf("%s:%d", failoverSrvIP, 8891+i)
	return fmt.Sprintf(`srt:
  listen: "127.0.0.1:0"
http:
  drainTimeout: 0s # no drain on SIGTERM: the test stops the server with its viewers still on it (see events_test.go)
  listen: %q
  publicURL: "http://%s"
  trustedProxies: [%q]
webrtc:
  listenIP: %s
  udpPort: %d
  tcpPort: %d
`, httpAddr, httpAddr, failoverSrvIP, failoverSrvIP, 8191+i, 8191+i) + `metrics:
  listen: ""
api:
  listen: ` + failoverSrvIP + `:0
  token: ` + failoverToken + `
pathDefaults:
  source: srt://127.0.0.1:8890
`
}

// TestEdgeFailover: two edges pull one origin and a round-robin entry
// point stands in front of them; the player page in Chromium is opened at
// the entry point and plays from one edge. That edge is SIGKILLed (a
// crashed or OOM-killed edge: its host refuses connections to its ports):
// the page must play again through the entry point, which now skips the
// dead edge, from the other edge, within 15 s, and the other edge must hold
// its new session. A pion viewer on the surviving edge keeps every frame
// at 30 fps throughout.
//
// Not parallel: headless Chromium needs the machine to itself, like
// TestBrowserPlays.
func TestEdgeFailover(t *testing.T) {
	b := browserNetns(t, failoverNet)
	ctx, srvNS := b.ctx, b.srvNS
	bin := testkit.BuildBinary(t, "./cmd/srtwhep")

	origin := serverInNetns(t, bin, srvNS, `srt:
  listen: "127.0.0.1:8890"
http:
  drainTimeout: 0s # no drain on SIGTERM: the test stops the server with its viewers still on it (see events_test.go)
  listen: "127.0.0.1:0"
webrtc:
  listenIP: 127.0.0.1
  udpPort: 0
  tcpPort: 0
metrics:
  listen: ""
`)
	ffmpegInNetns(t, srvNS, "640x360", origin.SRTURL("publish:live/cam1"))
	origin.WaitLog(t, 15*time.Second, "stream parameters", "path=live/cam1")
	var edges [2]*testkit.Server
	for i := range edges {
		edges[i] = serverInNetns(t, bin, srvNS, failoverEdgeConfig(i))
	}
	ep := startEntryPoint(t, srvNS, failoverEntry, edges[0].Addrs.HTTP, edges[1].Addrs.HTTP)

	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+failoverEntry+"/live/cam1")); err != nil {
		t.Fatalf("open the player page at the entry point: %v", err)
	}
	type pageState struct {
		Status        string `json:"status"`
		Connection    string `json:"connection"`
		VideoWidth    int    `json:"videoWidth"`
		FramesDecoded int    `json:"framesDecoded"`
	}
	poll := pagePoller[pageState](t, ctx)
	var st pageState
	testkit.WaitFor(t, 20*time.Second, "the page to play through the entry point", func() bool {
		st = poll()
		return livePlaying(st.Status) && st.VideoWidth == 640 && st.FramesDecoded > 30
	})
	// browserSession is the page's session on edge i, "" if none: the
	// entry point names the page's address in X-Forwarded-For.
	browserSession := func(i int) string {
		t.Helper()
		for _, s := range ep.sessions(t, edges[i]) {
			if strings.HasPrefix(s.Remote, failoverCliIP) && s.Path == "live/cam1" {
				return s.ID
			}
		}
		return ""
	}
	holder := -1
	testkit.WaitFor(t, 5*time.Second, "an edge to list the page's session", func() bool {
		for i := range edges {
			if browserSession(i) != "" {
				holder = i
				return true
			}
		}
		return false
	})
	survivor := 1 - holder
	if s := browserSession(survivor); s != "" {
		t.Fatalf("both edges list a session of the page (%s on edge %d)", s, survivor)
	}
	t.Logf("the page plays from edge %d (%s)", holder, edges[holder].Addrs.HTTP)
	// The session URL names the edge (http.publicURL), another origin than
	// the page's: the page must be allowed to reach it, or it can neither
	// DELETE its session nor tell a dead edge from a publisher gap.
	sessionURL := "http://" + edges[holder].Addrs.HTTP + "/live/cam1/whep/" + browserSession(holder)
	reach, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch(`+strconv.Quote(sessionURL)+`, {method: "OPTIONS"}).then(
  (r) => "answered " + r.status, (e) => "failed: " + e)`, chromedp.EvalAwaitPromise))
	if err != nil || reach != "answered 204" {
		t.Errorf("the page's OPTIONS to its session URL %s: %q (%v), want answered 204", sessionURL, reach, err)
	}

	bystander := startFailoverViewer(t, srvNS, edges[survivor].URL("/live/cam1/whep"))
	bystander.WaitLog(t, 15*time.Second, "EDGEVIEWER connected")
	// About a second of its video before the failover (some ten RTP
	// packets a picture).
	testkit.WaitFor(t, 15*time.Second, "the pion viewer to play on the other edge", func() bool {
		for _, s := range ep.sessions(t, edges[survivor]) {
			if strings.HasPrefix(s.Remote, failoverSrvIP+":") && s.Packets >= 300 {
				return true
			}
		}
		return false
	})

	// The entry point's next pick is the edge about to die, as it is for
	// some of a real balancer's requests: the page's retry must get past it.
	ep.pointAt(edges[holder].Addrs.HTTP)
	killedAt := time.Now()
	edges[holder].Kill(t)
	f0 := st.FramesDecoded
	var moved string
	// What the page went through, for the log: each change of its status
	// and connection state, timed from the kill.
	var steps []string
	last := ""
	testkit.WaitFor(t, 15*time.Second, "the page to play again from the other edge", func() bool {
		st = poll()
		if now := st.Status + " / " + st.Connection; now != last {
			steps = append(steps, fmt.Sprintf("+%v %s", time.Since(killedAt).Round(100*time.Millisecond), now))
			last = now
		}
		if !livePlaying(st.Status) || st.Connection != "connected" || st.FramesDecoded < 30 {
			return false
		}
		moved = browserSession(survivor)
		return moved != ""
	})
	recovered := time.Since(killedAt)
	t.Logf("the page plays again %v after the edge was killed (session %s on edge %d; %d frames decoded before, %d since); the page: %s",
		recovered.Round(time.Millisecond), moved, survivor, f0, st.FramesDecoded, strings.Join(steps, ", "))
	// It keeps playing: 60 more frames.
	f1 := st.FramesDecoded
	testkit.WaitFor(t, 10*time.Second, "60 more frames on the page", func() bool {
		st = poll()
		return st.FramesDecoded >= f1+60
	})
	routes := ep.log()
	t.Logf("entry point: %s", strings.Join(routes, "; "))
	var skipped bool
	for _, r := range routes {
		skipped = skipped || strings.Contains(r, "skipped "+edges[holder].Addrs.HTTP)
	}
	if !skipped {
		t.Errorf("the entry point never skipped the dead edge; routes: %q", routes)
	}
	if n := len(edges[survivor].Log.Lines("viewer opened", "path=live/cam1", "remote="+failoverCliIP)); n != 1 {
		t.Errorf("%d sessions of the page opened on the surviving edge, want 1", n)
	}

	res := stopFailoverViewer(t, bystander)
	checkFailoverViewer(t, "pion viewer on the surviving edge", res)
}
