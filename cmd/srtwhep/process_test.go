package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildBinary builds the real server binary once per test run.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "srtwhep")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestBinarySignalShutdown runs the real binary as `make run` does (but on
// free loopback ports), waits for /readyz, sends SIGTERM and expects a clean
// exit 0 within 5 s.
func TestBinarySignalShutdown(t *testing.T) {
	bin := buildBinary(t)
	httpPort := freeTCPPort(t)
	cfg := fmt.Sprintf(`srt:
  listen: "127.0.0.1:%d"
http:
  listen: "127.0.0.1:%d"
webrtc:
  listenIP: 127.0.0.1
  udpPort: %d
  tcpPort: %d
metrics:
  listen: "127.0.0.1:%d"
`, freeUDPPort(t), httpPort, freeUDPPort(t), freeTCPPort(t), freeTCPPort(t))
	file := filepath.Join(t.TempDir(), "srtwhep.yml")
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "-config", file)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })

	ready := fmt.Sprintf("http://127.0.0.1:%d/readyz", httpPort)
	waitFor(t, 15*time.Second, "/readyz", func() bool {
		resp, err := http.Get(ready)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("still running 5 s after SIGTERM\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "shut down cleanly") {
		t.Errorf("no clean-shutdown log line:\n%s", stderr.String())
	}
}

// TestBinaryCheckConfig: -check accepts the documented example and refuses
// a broken file with FILE:LINE and the fix, exiting non-zero.
func TestBinaryCheckConfig(t *testing.T) {
	bin := buildBinary(t)
	out, err := exec.Command(bin, "-check", "-config", "../../configs/srtwhep.yml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK") {
		t.Fatalf("-check on the example: %v\n%s", err, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.yml")
	os.WriteFile(bad, []byte("webrtc:\n  udpPort: 8189\n  publicIp: [203.0.113.7]\n"), 0o644)
	out, err = exec.Command(bin, "-check", "-config", bad).CombinedOutput()
	if err == nil {
		t.Fatalf("-check accepted an unknown key:\n%s", out)
	}
	if !strings.Contains(string(out), "bad.yml:3: webrtc.publicIp: unknown key") || !strings.Contains(string(out), "publicIPs") {
		t.Errorf("error lacks file:line or the fix:\n%s", out)
	}
}
