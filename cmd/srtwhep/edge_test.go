package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/config"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// The edge tests stand an ffmpeg SRT listener in for the origin (a caller
// reading from a listener gets its stream), or a real srtwhep origin where
// the origin's own answers matter (refusals, the chain).

// edgeTo starts a server whose every path is pulled from source.
func edgeTo(t *testing.T, source string, mutate func(*config.Config)) *testServer {
	t.Helper()
	return startServer(t, func(c *config.Config) {
		c.PathDefaults.Source = source
		if mutate != nil {
			mutate(c)
		}
	})
}

// TestEdgeColdStart: the first POST on a cold edge waits for the origin's
// first IDR and answers 201; the viewer starts at an IDR and plays every
// frame at 30 fps; a second viewer shares the one pull.
func TestEdgeColdStart(t *testing.T) {
	t.Parallel()
	origin := testkit.StartSRTListener(t, 0, "", x264Args("1280x720")...)
	ts := edgeTo(t, "srt://"+origin.Addr(), nil)

	start := time.Now()
	v := dialViewer(t, ts, "live/cam1")
	t.Logf("cold edge: viewer connected %v after its POST", time.Since(start).Round(time.Millisecond))
	v.waitUnits(t, 150, 20*time.Second)
	// The frame rate is judged on three seconds past the catch-up burst.
	v.waitLive(t, 90, 20*time.Second)
	checkStartsWithIDR(t, "first viewer", v.units())
	checkFullRate(t, "first viewer", v)

	w := dialViewer(t, ts, "live/cam1")
	w.waitUnits(t, 60, 20*time.Second)
	checkStartsWithIDR(t, "second viewer", w.units())
	if n := len(ts.logs.Lines("source connected", "path=live/cam1")); n != 1 {
		t.Errorf("%d pulls for two viewers, want 1", n)
	}
	if st := ts.hub.State("live/cam1"); st.Readers != 2 || !st.Playable {
		t.Errorf("hub state %+v, want 2 readers of a playable path", st)
	}
}

// TestEdgeLinger: sourceLinger after the last viewer leaves, the pull is
// closed: one log line, and the path has no publisher any more.
func TestEdgeLinger(t *testing.T) {
	t.Parallel()
	origin := testkit.StartSRTListener(t, 0, "", x264Args("640x360")...)
	ts := edgeTo(t, "srt://"+origin.Addr(), func(c *config.Config) { c.PathDefaults.SourceLinger = config.Duration(time.Second) })
	v := dialViewer(t, ts, "live/cam1")
	v.waitUnits(t, 30, 20*time.Second)
	if !ts.publishing("live/cam1") {
		t.Fatal("no publisher on the edge while its viewer plays")
	}
	v.Close()
	left := time.Now()
	line := ts.logs.WaitLog(t, 10*time.Second, "source closed", "path=live/cam1", `reason="no viewers for 1s"`)
	t.Logf("pull closed %v after the viewer left: %s", time.Since(left).Round(time.Millisecond), line)
	testkit.WaitFor(t, 5*time.Second, "the path to lose its publisher", func() bool {
		return !ts.publishing("live/cam1") && ts.hub.State("live/cam1") == hub.PathState{}
	})
	// The origin saw its reader leave: ffmpeg ends its listener session.
	if err := origin.Wait(t, 10*time.Second); err == nil {
		t.Log("origin ffmpeg exited when the edge hung up")
	}
}

// TestEdgeReconnect: the origin dies (SIGKILL, nothing tells the edge) and
// comes back a few seconds later at another resolution. The edge redials
// with back-off, logging each failed attempt, and the viewer attached
// before the drop continues in the same session, with contiguous RTP,
// from the new stream's first IDR, without a new POST.
func TestEdgeReconnect(t *testing.T) {
	t.Parallel()
	origin := testkit.StartSRTListener(t, 0, "", x264Args("640x360")...)
	ts := edgeTo(t, "srt://"+origin.Addr(), nil)
	v := dialViewer(t, ts, "live/cam1")
	v.waitUnits(t, 60, 20*time.Second)

	killed := time.Now()
	if err := origin.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	line := ts.logs.WaitLog(t, 10*time.Second, "source lost; reconnecting", "path=live/cam1")
	t.Logf("drop noticed after %v: %s", time.Since(killed).Round(time.Millisecond), line)
	line = ts.logs.WaitLog(t, 15*time.Second, "source unavailable; retrying", "path=live/cam1", "attempt=1")
	t.Logf("first failed redial: %s", line)
	before := v.count()

	testkit.StartSRTListener(t, origin.Port, "", x264Args("320x240")...)
	waitSize(t, v, 320, 240, 20*time.Second)
	t.Logf("viewer resumed %v after the origin died", time.Since(killed).Round(time.Millisecond))
	v.waitUnits(t, v.count()+60, 20*time.Second)
	if v.count() <= before {
		t.Fatal("no frames after the gap")
	}
	checkKept(t, ts, "viewer", v)
	resume := checkContinued(t, "viewer", v)
	if fps := liveFrameRate(v.units()[resume:]); fps < 28 || fps > 32 {
		t.Errorf("%.1f frames/s after the reconnect, want ~30", fps)
	}
	// The waits before each redial: 1 s after the loss, then doubling.
	waits := append(ts.logs.Lines("source lost; reconnecting", "path=live/cam1"),
		ts.logs.Lines("source unavailable; retrying", "path=live/cam1")...)
	for i, l := range waits {
		want := []string{"retry_in=1s", "retry_in=2s", "retry_in=4s", "retry_in=8s"}
		if i < len(want) && !strings.Contains(l, want[i]) {
			t.Errorf("wait %d: %q, want %s (back-off doubling from 1 s)", i+1, l, want[i])
		}
	}
	if n := len(ts.logs.Lines("session", "viewer opened")); n != 1 {
		t.Errorf("%d viewer sessions opened, want the original one only", n)
	}
}

// TestEdgeUnreachable: an origin that never answers gets the viewer a 504
// with the reason after sourceTimeout, the log says what to check, and
// viewers retrying in a tight loop do not make the edge dial more than
// once a second.
func TestEdgeUnreachable(t *testing.T) {
	t.Parallel()
	sink := newSilentSource(t)
	addr := sink.conn.LocalAddr().String()
	ts := edgeTo(t, "srt://"+addr, func(c *config.Config) {
		c.PathDefaults.SourceTimeout = config.Duration(2 * time.Second)
		c.PathDefaults.SourceLinger = config.Duration(time.Second)
	})
	start := time.Now()
	code, h, body := ts.postOffer(t, "live/cam1", "")
	took := time.Since(start)
	want := `path "live/cam1": origin srt://` + addr + ` sent no picture within 2s: no answer (connection timed out)`
	if code != http.StatusGatewayTimeout || problemDetail(t, code, body) != want || h.Get("Retry-After") == "" {
		t.Fatalf("POST: %d %q (Retry-After %q), want 504 with detail %q", code, body, h.Get("Retry-After"), want)
	}
	t.Logf("504 after %v: %s", took.Round(time.Millisecond), strings.TrimSpace(body))
	ts.logs.WaitLog(t, 5*time.Second, "source unavailable; retrying", "path=live/cam1", "attempt=1",
		"check that the source server runs", "UDP port")

	// Viewers retry as fast as the edge answers them.
	loopStart := time.Now()
	posts := 0
	for time.Since(loopStart) < 6*time.Second {
		if code, _, _ := ts.postOffer(t, "live/cam1", ""); code != http.StatusGatewayTimeout {
			t.Fatalf("POST %d: %d, want 504", posts, code)
		}
		posts++
	}
	elapsed := time.Since(start)
	n := sink.attempts()
	t.Logf("%d POSTs in %v made %d dial attempts", posts+1, elapsed.Round(time.Millisecond), n)
	if limit := int(elapsed/time.Second) + 1; n > limit || n < 2 {
		t.Errorf("%d dial attempts in %v, want between 2 and %d (at most one a second)", n, elapsed, limit)
	}
	ts.logs.WaitLog(t, 10*time.Second, "source closed", "path=live/cam1", "no viewers for 1s")
	if ts.publishing("live/cam1") {
		t.Error("a publisher on a path whose source never answered")
	}
}

// problemDetail is the detail of an RFC 9457 problem body whose status is
// code, "" when body is not one.
func problemDetail(t *testing.T, code int, body string) string {
	t.Helper()
	var p struct {
		Status int
		Detail string
	}
	if err := json.Unmarshal([]byte(body), &p); err != nil || p.Status != code {
		t.Logf("not a problem with status %d: %q (%v)", code, body, err)
		return ""
	}
	return p.Detail
}

// TestEdgeRefused: an origin that refuses the stream (a real srtwhep with
// nothing published on the path) gets the viewer a 404 with the origin's
// reason, at once.
func TestEdgeRefused(t *testing.T) {
	t.Parallel()
	origin := startServer(t, nil)
	ts := edgeTo(t, "srt://"+origin.srt.Addr().String(), nil)
	start := time.Now()
	code, _, body := ts.postOffer(t, "live/none", "")
	want := `path "live/none": origin srt://` + origin.srt.Addr().String() + `: no such stream (1404)`
	// An edge keeps 404 for a stream its origin has not; the problem's
	// detail is the origin's reason.
	if code != http.StatusNotFound || problemDetail(t, code, body) != want {
		t.Fatalf("POST: %d %q, want 404 with detail %q", code, body, want)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("the refusal took %v; the origin answered at once", took)
	}
	ts.logs.WaitLog(t, 5*time.Second, "source has no such stream; not asking it again for 10s", "path=live/none", "no such stream (1404)", "start its publisher")
	origin.logs.WaitLog(t, 5*time.Second, "srt reader rejected", "path=live/none")
}

// TestPublicURL: with http.publicURL the Location is an absolute URL of
// this server, and DELETE on its path still finds the session.
func TestPublicURL(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *config.Config) { c.HTTP.PublicURL = "https://edge1.example.com" })
	startFFmpeg(t, x264Args("640x360"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")
	code, h, body := ts.postOffer(t, "live/cam1", "")
	if code != http.StatusCreated {
		t.Fatalf("POST: %d %q", code, body)
	}
	loc := h.Get("Location")
	rest, ok := strings.CutPrefix(loc, "https://edge1.example.com/live/cam1/whep/")
	if !ok || len(rest) != 32 {
		t.Fatalf("Location %q, want https://edge1.example.com/live/cam1/whep/ID", loc)
	}
	if code, _, body := request(t, http.MethodDelete, ts.httpURL(strings.TrimPrefix(loc, "https://edge1.example.com")), "", "", ""); code != http.StatusOK {
		t.Fatalf("DELETE: %d %q", code, body)
	}
}

// TestEdgeChain: an origin with a publisher, edges A and B pulling from it
// and edge C pulling from A. Every viewer gets every frame, no gaps; the
// origin has exactly one SRT reader per edge and A one for C, however many
// viewers each edge has; each hop's added latency is measured by when the
// same picture reaches viewers on either side of it.
func TestEdgeChain(t *testing.T) {
	t.Parallel()
	const path = "live/cam1"
	origin := startServer(t, nil)
	startFFmpeg(t, x264Args("640x360"), origin.srtURL("publish:"+path))
	origin.waitPublisher(t, path)
	src := "srt://" + origin.srt.Addr().String()
	edgeA := edgeTo(t, src, nil)
	edgeB := edgeTo(t, src, nil)
	edgeC := edgeTo(t, "srt://"+edgeA.srt.Addr().String(), nil)

	ref := dialViewer(t, origin, path)
	viewers := map[string]*viewer{}
	for _, e := range []struct {
		name string
		ts   *testServer
		n    int
	}{{"A", edgeA, 2}, {"B", edgeB, 3}, {"C", edgeC, 1}} {
		for i := range e.n {
			viewers[e.name+string(rune('1'+i))] = dialViewer(t, e.ts, path)
		}
	}
	for name, v := range viewers {
		v.waitUnits(t, 150, 30*time.Second)
		checkEveryFrame(t, "viewer "+name, v)
	}
	ref.waitUnits(t, 150, 10*time.Second)

	srtReaders := func(ts *testServer) int {
		n := 0
		for _, s := range ts.srtRd.APISessions() {
			if s.Path == path {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		name string
		ts   *testServer
		want int
	}{{"origin", origin, 2}, {"edge A", edgeA, 1}, {"edge B", edgeB, 0}, {"edge C", edgeC, 0}} {
		if got := srtReaders(c.ts); got != c.want {
			t.Errorf("%s has %d SRT readers of %s, want %d (one per edge pulling from it)", c.name, got, path, c.want)
		}
	}
	for name, ts := range map[string]*testServer{"A": edgeA, "B": edgeB, "C": edgeC} {
		if n := len(ts.logs.Lines("source connected", "path="+path)); n != 1 {
			t.Errorf("edge %s connected to its source %d times, want once", name, n)
		}
	}

	// Three more seconds that all three viewers see live.
	for _, v := range []*viewer{ref, viewers["A1"], viewers["C1"]} {
		v.waitUnits(t, v.count()+90, 10*time.Second)
	}
	hop1 := arrivalDelays(ref, viewers["A1"])
	hop2 := arrivalDelays(viewers["A1"], viewers["C1"])
	for _, h := range []struct {
		name string
		d    []time.Duration
	}{{"origin → edge A", hop1}, {"edge A → edge C", hop2}} {
		if len(h.d) < 60 {
			t.Errorf("%s: only %d pictures seen on both sides", h.name, len(h.d))
			continue
		}
		t.Logf("added latency %s: median %v, p90 %v over %d pictures (srt.latency %v per hop)", h.name,
			h.d[len(h.d)/2].Round(time.Millisecond), h.d[len(h.d)*9/10].Round(time.Millisecond), len(h.d),
			time.Duration(config.Default().SRT.Latency))
	}
}

// TestEdgeCredentials: an origin whose path needs a read token refuses an
// edge without one (404 with the reason) and serves one whose source URL
// carries it as NAME:TOKEN@.
func TestEdgeCredentials(t *testing.T) {
	t.Parallel()
	origin := startServer(t, func(c *config.Config) {
		p := c.PathDefaults
		p.ReadTokens = []string{"edge-token-1"}
		c.Paths["live/locked"] = p
	})
	startFFmpeg(t, x264Args("320x240"), origin.srtURL("publish:live/locked"))
	origin.waitPublisher(t, "live/locked")
	addr := origin.srt.Addr().String()

	// The token edge first: the origin throttles an address after a
	// failure, and both edges dial from loopback.
	withToken := edgeTo(t, "srt://edge:edge-token-1@"+addr, nil)
	v := dialViewer(t, withToken, "live/locked")
	v.waitUnits(t, 30, 20*time.Second)
	checkStartsWithIDR(t, "viewer through the token edge", v.units())
	if lines := withToken.logs.Lines("edge-token-1"); len(lines) != 0 {
		t.Errorf("the token reached the edge's log: %q", lines[0])
	}

	bare := edgeTo(t, "srt://"+addr, nil)
	code, _, body := bare.postOffer(t, "live/locked", "")
	if code != http.StatusNotFound || !strings.Contains(body, "unauthorized (1401)") {
		t.Fatalf("edge without the token: %d %q, want 404 with unauthorized (1401)", code, body)
	}
	bare.logs.WaitLog(t, 5*time.Second, "source unavailable; retrying", "srt://NAME:TOKEN@HOST:PORT")
}

// TestEdgePushWins: an encoder publishing straight to a pulled path takes
// it over; the pull stops for good and the viewer goes on with the pushed
// stream in the same session.
func TestEdgePushWins(t *testing.T) {
	t.Parallel()
	origin := testkit.StartSRTListener(t, 0, "", x264Args("640x360")...)
	ts := edgeTo(t, "srt://"+origin.Addr(), nil)
	v := dialViewer(t, ts, "live/cam1")
	v.waitUnits(t, 30, 20*time.Second)

	startFFmpeg(t, x264Args("320x240"), ts.srtURL("publish:live/cam1"))
	ts.logs.WaitLog(t, 15*time.Second, "source closed", "path=live/cam1", "a publisher took the path over")
	waitSize(t, v, 320, 240, 20*time.Second)
	v.waitUnits(t, v.count()+30, 20*time.Second)
	checkKept(t, ts, "viewer", v)
	checkContinued(t, "viewer", v)
	if n := len(ts.logs.Lines("source connected", "path=live/cam1")); n != 1 {
		t.Errorf("the edge connected to its source %d times, want once (no redial against the pushed publisher)", n)
	}
}
