package loadgen_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/bench/internal/ladder"
	"github.com/srtwhep/srtwhep/bench/internal/loadgen"
)

// TestLadderAgainstSrtwhep runs a two-step ladder and checks the figures
// that come from the server process and its metrics are really read. It
// lives here, not in internal/ladder, because the real-server fixture is this
// package's.
func TestLadderAgainstSrtwhep(t *testing.T) {
	srv := loadgen.StartTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rep, err := ladder.Run(ctx, ladder.Config{
		Pool:      loadgen.Config{URL: srv.WHEP, DecodeEvery: 3},
		Criteria:  loadgen.Criteria{FPS: 30},
		Steps:     []int{2, 4},
		Rate:      20,
		Hold:      3 * time.Second,
		Settle:    time.Second,
		ServerPID: srv.PID,
		Metrics:   srv.Metrics,
	})
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + md.String())
	if len(rep.Steps) != 3 {
		t.Fatalf("%d steps, want 3 (baseline, 2, 4); stopped early: %s", len(rep.Steps), rep.StoppedEarly)
	}
	for _, s := range rep.Steps {
		if s.RSSMiB <= 0 || s.CPUMean <= 0 {
			t.Errorf("step N=%d: RSS %.1f MiB, CPU %.1f%%; the server's /proc was not read", s.N, s.RSSMiB, s.CPUMean)
		}
		if s.Drops == nil {
			t.Errorf("step N=%d: drops not scraped from %s", s.N, srv.Metrics)
		}
		if s.N > 0 && s.Verified != s.N {
			t.Errorf("step N=%d: %d verified: %v", s.N, s.Verified, s.Why)
		}
	}
}
