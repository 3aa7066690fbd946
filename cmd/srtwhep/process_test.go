package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// TestBinarySignalShutdown runs the real binary as `make run` does (but on
// ephemeral loopback ports, read back from its ready file), checks /readyz
// and that the version it prints is the one its metrics report, sends
// SIGTERM and expects a clean exit 0 within 5 s.
func TestBinarySignalShutdown(t *testing.T) {
	t.Parallel()
	bin := testkit.BuildBinary(t, "./cmd/srtwhep")
	out, err := exec.Command(bin, "-version").CombinedOutput()
	version, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "srtwhep ")
	if err != nil || !ok || version == "" || strings.ContainsAny(version, " \n") {
		t.Fatalf("srtwhep -version: %v, printed %q; want \"srtwhep VERSION\"", err, out)
	}

	srv := testkit.StartServer(t, bin, testkit.LoopbackConfig(""))
	if code, _, body := request(t, http.MethodGet, srv.URL("/readyz"), "", "", ""); code != http.StatusOK ||
		!strings.Contains(body, srv.Addrs.SRT) {
		t.Errorf("/readyz: %d %q, want 200 with the bound addresses", code, body)
	}
	if srv.Addrs.Metrics == "" {
		t.Fatal("the ready file names no metrics address")
	}
	families := testkit.Scrape(t, srv.Addrs.Metrics)
	info := families["srtwhep_build_info"]
	if info == nil || len(info.GetMetric()) != 1 {
		t.Fatalf("srtwhep_build_info: %v, want one series", info)
	}
	if got := testkit.LabelOf(info.GetMetric()[0], "version"); got != version {
		t.Errorf("srtwhep_build_info{version=%q}, but -version prints %q", got, version)
	}

	srv.Stop(t)
	if ls := srv.Log.Lines("shut down cleanly"); len(ls) == 0 {
		t.Errorf("no clean-shutdown log line:\n%s", srv.Log.String())
	}
}

// TestBinaryCheckConfig: -check accepts the documented example and refuses
// a broken file with FILE:LINE and the fix, exiting non-zero.
func TestBinaryCheckConfig(t *testing.T) {
	t.Parallel()
	bin := testkit.BuildBinary(t, "./cmd/srtwhep")
	out, err := exec.Command(bin, "-check", "-config", "../../configs/srtwhep.yml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK") {
		t.Fatalf("-check on the example: %v\n%s", err, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.yml")
	if err := os.WriteFile(bad, []byte("webrtc:\n  udpPort: 8189\n  publicIp: [203.0.113.7]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(bin, "-check", "-config", bad).CombinedOutput()
	if err == nil {
		t.Fatalf("-check accepted an unknown key:\n%s", out)
	}
	if !strings.Contains(string(out), "bad.yml:3: webrtc.publicIp: unknown key") || !strings.Contains(string(out), "publicIPs") {
		t.Errorf("error lacks file:line or the fix:\n%s", out)
	}
}
