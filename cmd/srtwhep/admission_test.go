package main

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// TestAdmissionPastCPULimit: with a deliberately tiny CPU limit, a new
// viewer is refused with 503 + Retry-After while the viewers already
// watching lose nothing and SRT ingest keeps its round-trip time.
//
// Not parallel: the CPU figure is the whole process's, and the SRT RTT it
// compares must not move with other tests' load.
func TestAdmissionPastCPULimit(t *testing.T) {
	ts := startServer(t, nil)
	startFFmpeg(t, x264Args("640x360"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")
	a := dialViewer(t, ts, "live/cam1")
	b := dialViewer(t, ts, "live/cam1")
	a.waitUnits(t, 30, 15*time.Second)
	rttBefore := ts.ingest.Stats()[0].Publisher.SRT.RTTMs

	// Any work at all is now "over the limit".
	ts.load.SetMaxCPU(0.001)
	testkit.WaitFor(t, 10*time.Second, "a CPU sample above the limit", func() bool { return ts.load.Check() != nil })

	_, err := whepclient.Dial(t.Context(), ts.httpURL("/live/cam1/whep"), whepclient.Options{SettingEngine: testkit.LoopbackOnly})
	var he *whepclient.HTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusServiceUnavailable || he.RetryAfter == "" {
		t.Fatalf("viewer past the CPU limit: %v, want 503 with Retry-After", err)
	}
	if !strings.Contains(he.Body, "CPU") {
		t.Errorf("503 body does not say why: %q", he.Body)
	}
	t.Logf("refused: %v", he)

	na, nb := a.count(), b.count()
	a.waitUnits(t, na+60, 20*time.Second)
	b.waitUnits(t, nb+60, 20*time.Second)
	checkUndisturbed(t, "viewer A", a)
	checkUndisturbed(t, "viewer B", b)
	if ls := ts.logs.Lines("reader is too slow"); len(ls) > 0 {
		t.Errorf("an admitted viewer dropped frames: %s", ls[0])
	}
	rttAfter := ts.ingest.Stats()[0].Publisher.SRT.RTTMs
	t.Logf("SRT RTT %.2f ms before, %.2f ms after", rttBefore, rttAfter)
	if rttAfter > rttBefore+50 {
		t.Errorf("SRT RTT grew from %.2f to %.2f ms", rttBefore, rttAfter)
	}

	// Back under the limit, viewers are admitted again.
	ts.load.SetMaxCPU(0)
	dialViewer(t, ts, "live/cam1").waitUnits(t, 5, 15*time.Second)
}
