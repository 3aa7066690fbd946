package main

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// TestConfigReload runs the server from a file and edits it while a viewer
// watches: new read tokens, publish credentials and a lower maxReaders
// apply to newcomers only, the viewer keeps playing without a gap, a
// listener change is reported as needing a restart, and a broken edit is
// refused with FILE:LINE while the server keeps serving.
//
// Not parallel: SIGHUP goes to the whole test process, so no other server
// may run meanwhile.
func TestConfigReload(t *testing.T) {
	ts, file := startServerFile(t, testkit.LoopbackConfig(""))
	startFFmpeg(t, x264Args("320x240"), ts.srtURL("publish:live/r"))
	ts.waitPublisher(t, "live/r")
	watcher := dialViewer(t, ts, "live/r")
	watcher.waitUnits(t, 15, 15*time.Second)

	t.Run("SIGHUP with an unchanged file", func(t *testing.T) {
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		ts.logs.WaitLog(t, 5*time.Second, "config reloaded", "trigger=SIGHUP", "changed=nothing")
	})

	// One document: LoopbackConfig already holds the srt section.
	writeFile(t, file, strings.Replace(testkit.LoopbackConfig(`pathDefaults:
  maxReaders: 1
  readTokens: [viewer-token-0002]
  publishUser: cam
  publishPass: new-publish-pass-01
`), "srt:\n", "srt:\n  latency: 300ms\n", 1))
	line := ts.logs.WaitLog(t, 5*time.Second, "config reloaded", "trigger=\"file changed\"", "pathDefaults.maxReaders")
	for _, k := range []string{"pathDefaults.readTokens", "pathDefaults.publishUser", "pathDefaults.publishPass"} {
		if !strings.Contains(line, k) {
			t.Errorf("reload log does not list %s: %s", k, line)
		}
	}
	ts.logs.WaitLog(t, time.Second, "restart needed for: srt.latency")
	if got := ts.config().SRT.Latency.String(); got != "120ms" {
		t.Errorf("srt.latency now reads %s; a restart-only key must keep its running value", got)
	}

	t.Run("new read token", func(t *testing.T) {
		if code, _, _ := ts.postOffer(t, "live/r", ""); code != http.StatusUnauthorized {
			t.Errorf("viewer without the new token: %d, want 401", code)
		}
		ts.waitUnthrottled(t)
		// The token is right, but maxReaders is now 1 and the watcher holds
		// the seat: refused, and the watcher is not kicked for it.
		code, h, _ := ts.postOffer(t, "live/r", "viewer-token-0002")
		if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
			t.Errorf("viewer over the lowered maxReaders: %d, want 503 with Retry-After", code)
		}
	})

	t.Run("new publish credentials", func(t *testing.T) {
		p := startFFmpeg(t, x264Args("320x240", "-t", "5"), ts.srtURL("publish:live/r2"))
		if err := p.Wait(t, 15*time.Second); err == nil {
			t.Error("publisher without the new credentials was accepted")
		}
		ts.logs.WaitLog(t, 5*time.Second, "srt publisher rejected", "path=live/r2", "unauthorized")
		ts.waitUnthrottled(t)
		startFFmpeg(t, x264Args("320x240"), ts.srtURL("publish:live/r2:cam:new-publish-pass-01"))
		ts.waitPublisher(t, "live/r2")
	})

	t.Run("broken edit refused", func(t *testing.T) {
		good, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, file, string(good)+"readers:\n  queueSize: lots\n")
		line := ts.logs.WaitLog(t, 5*time.Second, "config reload refused")
		at := regexp.QuoteMeta(filepath.Base(file)) + `:\d+: readers\.queueSize`
		if !regexp.MustCompile(at).MatchString(line) || !strings.Contains(line, "level=ERROR") {
			t.Errorf("refusal should be an ERROR with FILE:LINE: key: %s", line)
		}
		if got := ts.config().PathDefaults.MaxReaders; got != 1 {
			t.Errorf("maxReaders = %d after a refused edit, want the previous 1", got)
		}
		if code, _, _ := request(t, "GET", ts.httpURL("/healthz"), "", "", ""); code != http.StatusOK {
			t.Errorf("/healthz after a refused edit: %d", code)
		}
	})

	before := watcher.count()
	watcher.waitUnits(t, before+15, 10*time.Second)
	if st := watcher.Stats(); st.SeqGaps != 0 || st.BrokenAUs != 0 {
		t.Errorf("the viewer was disturbed by the reloads: %d gaps, %d broken AUs", st.SeqGaps, st.BrokenAUs)
	}
	select {
	case <-watcher.Done():
		t.Errorf("the viewer was disconnected by a reload: %v", watcher.Err())
	default:
	}
}
