package main

import (
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/config"
)

// TestRefusalLoopLog: an encoder refused 20 times in a row (a real ffmpeg
// with B-frames on a video: passthrough path, reconnecting as fast as it
// can) costs the log the first refusal in full and at most a summary
// line or two, not two lines each; /v1/paths counts every refusal.
func TestRefusalLoopLog(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *config.Config) { c.PathDefaults.Video = "passthrough" })
	const loops = 20
	start := time.Now()
	for i := range loops {
		p := startFFmpeg(t, []string{"-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-t", "5",
			"-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "30"}, ts.srtURL("publish:live/loop"))
		_ = p.Wait(t, 20*time.Second) // ffmpeg fails once the server closes it
		if i == 0 {
			ts.logs.WaitLog(t, 10*time.Second, "publisher closed", "path=live/loop", "B-frames")
		}
	}
	took := time.Since(start)
	p, ok := ts.ingest.Problem("live/loop")
	if !ok || p.Count != loops {
		t.Fatalf("problem %+v, %v; want %d refusals counted", p, ok, loops)
	}
	var lines []string
	for _, l := range ts.logs.Lines("path=live/loop") {
		if strings.Contains(l, "publisher connected") || strings.Contains(l, "publisher closed") || strings.Contains(l, "refused again") {
			lines = append(lines, l)
		}
	}
	all := len(ts.logs.Lines("path=live/loop"))
	t.Logf("%d refusals in %v: %d connect/close/summary lines, %d lines in all for the path", loops, took.Round(time.Millisecond), len(lines), all)
	// connected + closed of the first, and a summary per 10 s: 3 when the
	// loop takes 10-20 s, as here unloaded (a loaded machine slows ffmpeg).
	if limit := 2 + int(took/(10*time.Second)); len(lines) > limit {
		t.Errorf("%d lines for %d refusals in %v, want at most %d:\n%s", len(lines), loops, took, limit, strings.Join(lines, "\n"))
	}
}

// TestRefusalKeepsGraceViewers: a viewer waiting out the grace period of
// a good publisher that left is not bounced by publishers refused for
// B-frames (video: passthrough): it stays attached, is handed nothing of
// theirs, and resumes when a good publisher comes back.
func TestRefusalKeepsGraceViewers(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *config.Config) { c.PathDefaults.Video = "passthrough" })
	url := ts.srtURL("publish:live/grace")
	first := startFFmpeg(t, x264Args("320x240", "-t", "4"), url)
	ts.waitPublisher(t, "live/grace")
	v := dialViewer(t, ts, "live/grace")
	v.waitUnits(t, 10, 15*time.Second)
	_ = first.Wait(t, 20*time.Second)
	ts.logs.WaitLog(t, 10*time.Second, "keeping its viewers for the next one", "path=live/grace")
	n0 := v.count()

	for range 5 {
		p := startFFmpeg(t, []string{"-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-t", "5",
			"-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "30"}, url)
		_ = p.Wait(t, 20*time.Second)
	}
	if p, ok := ts.ingest.Problem("live/grace"); !ok || p.Count != 5 {
		t.Fatalf("problem %+v, %v; want 5 refusals", p, ok)
	}
	if n := v.count(); n > n0+2 { // what was in flight when the first left
		t.Errorf("the viewer in grace got %d access units from refused publishers", n-n0)
	}
	if n := len(ts.logs.Lines("viewer continues with a new publisher")); n != 0 {
		t.Errorf("%d handovers to refused publishers, want none", n)
	}

	startFFmpeg(t, x264Args("320x240"), url)
	n1 := v.count()
	v.waitUnits(t, n1+30, 20*time.Second)
	ts.logs.WaitLog(t, 5*time.Second, "viewer continues with a new publisher")
	t.Logf("viewer: %d units from the first publisher, %d during 5 refusals, then %d of the good one", n0, n1-n0, v.count()-n1)
}
