package loadgen_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/bench/internal/ladder"
	"github.com/srtwhep/srtwhep/bench/internal/loadgen"
	"github.com/srtwhep/srtwhep/internal/testkit"
)

// congestionLog is the server's line when a viewer's receiver reports show
// heavy loss (pkg/rtpsend/congestion.go).
const congestionLog = "viewer's link loses too much"

func congestedDrops(t *testing.T, metrics string) float64 {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	m, err := ladder.Scrape(t.Context(), c, metrics, ladder.MetricFramesDropped)
	if err != nil {
		t.Fatal(err)
	}
	return m[ladder.MetricFramesDropped].Label("reason", "congested")
}

// TestBrowserViewersFeedback: light viewers in browser mode send a
// receiver report a second and NACKs through SRTCP, built from their
// socket counts, and the real server acts on them. Healthy viewers on
// loopback never trip its congestion rule; a viewer whose socket loses
// most of every frame does, which only its reports can tell the server.
func TestBrowserViewersFeedback(t *testing.T) {
	srv := loadgen.StartTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()

	healthy := loadgen.Config{URL: srv.WHEP, DecodeEvery: 4, Audio: true}
	healthy.ApplyMode(loadgen.ModeBrowser)
	before := congestedDrops(t, srv.Metrics)
	rep, err := loadgen.Run(ctx, loadgen.RunConfig{
		Pool: healthy, Criteria: loadgen.Criteria{FPS: 30, Audio: true}, N: 4, Rate: 20, Hold: 8 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	t.Logf("healthy viewers:\n%s", out.String())
	if rep.Verified != 4 {
		t.Errorf("%d of 4 viewers verified", rep.Verified)
	}
	if rep.FeedbackSessions != 4 {
		t.Errorf("%d sessions sent receiver reports built from their socket's counts, want all 4", rep.FeedbackSessions)
	}
	if r := rep.ReportsPerViewerSecond; r < 0.7 || r > 1.3 {
		t.Errorf("%.2f receiver reports per second per viewer, want about 1", r)
	}
	if rep.RTCPUnsent != 0 {
		t.Errorf("%d RTCP packets built but not sent", rep.RTCPUnsent)
	}
	if d := congestedDrops(t, srv.Metrics) - before; d != 0 {
		t.Errorf("healthy loopback viewers made the server drop %.0f frames for congestion", d)
	}
	if lines := srv.Srv.Log.Lines(congestionLog); len(lines) > 0 {
		t.Errorf("the server found healthy viewers congested: %q", lines)
	}
	// Every SSRC the viewers' RTCP names is one the server sends.
	if lines := srv.Srv.Log.Lines("unhandled RTCP"); len(lines) > 0 {
		t.Errorf("the server met RTCP about SSRCs it does not know: %q", lines)
	}

	// Now one light viewer whose 4 KiB socket buffer overflows with every
	// frame: the server learns of its loss from its reports alone.
	lossy := loadgen.Config{URL: srv.WHEP, MaxDecode: -1, SocketBuffer: 4096}
	lossy.ApplyMode(loadgen.ModeBrowser)
	pool, err := loadgen.NewPool(lossy)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if added, _ := pool.Grow(ctx, 1, 1); added != 1 {
		fails, _ := pool.Failures()
		t.Fatalf("the lossy viewer did not connect: %v", fails)
	}
	testkit.WaitFor(t, 60*time.Second, "frames dropped for congestion", func() bool {
		return congestedDrops(t, srv.Metrics) > 0
	})
	srv.Srv.WaitLog(t, 10*time.Second, congestionLog)
	s := pool.Sessions()[0].Snapshot()
	t.Logf("lossy viewer: %d packets, %d gaps, %d reports, %d packets NACKed, %d PLIs", s.Packets, s.SeqGaps,
		s.ReportsSent, s.NACKedSent, s.PLIsSent)
	if s.ReportsSent == 0 || s.NACKedSent == 0 {
		t.Errorf("lossy viewer sent %d reports and NACKed %d packets; want both", s.ReportsSent, s.NACKedSent)
	}
}
