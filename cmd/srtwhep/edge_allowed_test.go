package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/haivision/srtgo"

	"github.com/srtwhep/srtwhep/pkg/config"
)

// TestEdgePullsOnlyAllowedPaths: an edge whose config names the paths it
// pulls (a source on listed paths, none in pathDefaults) never asks its
// origin for any other path. Such a path is a local one: its POST answers
// 409 like any path without a publisher (something may publish to it on
// the edge), an SRT reader of it is refused as not found, and the origin,
// a real srtwhep that logs every reader it refuses, sees no request for
// it. The allowed path's POST, made after, is refused by the origin and
// logged there, which proves the origin's log would have shown a pull of
// the others.
func TestEdgePullsOnlyAllowedPaths(t *testing.T) {
	t.Parallel()
	origin := startServer(t, nil)
	src := "srt://" + origin.srt.Addr().String()
	ts := startServer(t, func(c *config.Config) {
		allowed := c.PathDefaults
		allowed.Source = src
		c.Paths = map[string]config.Path{"live/allowed": allowed}
	})
	for _, path := range []string{"live/other", "live/allowed/sub", "live/Allowed"} {
		code, h, body := ts.postOffer(t, path, "")
		if code != http.StatusConflict || h.Get("Retry-After") == "" || !strings.Contains(problemDetail(t, code, body), "no stream is being published") {
			t.Fatalf("POST %s: %d %q, want 409 + Retry-After (a local path without a publisher)", path, code, body)
		}
	}
	// An SRT reader of such a path is refused at its handshake (no such
	// stream), not pulled for either.
	if r := srtReject(t, ts, "read:live/other"); r != srtgo.RejectionReasonNotFound {
		t.Errorf("SRT read of live/other: reject reason %d, want %d (not found)", r, srtgo.RejectionReasonNotFound)
	}
	start := time.Now()
	code, _, body := ts.postOffer(t, "live/allowed", "")
	if code != http.StatusNotFound || !strings.Contains(problemDetail(t, code, body), "no such stream (1404)") {
		t.Fatalf("POST live/allowed: %d %q, want 404 with the origin's 1404", code, body)
	}
	t.Logf("allowed path refused by the origin in %v", time.Since(start).Round(time.Millisecond))
	origin.logs.WaitLog(t, 5*time.Second, "srt reader rejected", "path=live/allowed")
	if n := len(origin.logs.Lines("srt reader")); n != 1 {
		t.Errorf("the origin logged %d reader lines, want the allowed path's 1:\n%s", n, strings.Join(origin.logs.Lines("srt reader"), "\n"))
	}
	if l := ts.logs.Lines("source", "path=live/other"); len(l) != 0 {
		t.Errorf("the edge logged a source for a path without one: %q", l)
	}
}
