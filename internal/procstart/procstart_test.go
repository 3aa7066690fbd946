package procstart

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// start runs a shell script standing in for the binary: it gets the same
// arguments, so $4 is the ready file.
func start(t *testing.T, script string) (*Launch, Addrs, error) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-srtwhep")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SRTWHEP_TEST_KNOB", "1")
	l, err := Prepare(dir, bin, "logLevel: warn\n")
	if err != nil {
		t.Fatal(err)
	}
	out := &strings.Builder{}
	l.Cmd.Stdout = out
	if err := l.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var werr error
	go func() {
		werr = l.Cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = l.Cmd.Process.Kill()
		<-done
	})
	a, err := l.WaitReady(context.Background(), 5*time.Second, done, func() error { return werr })
	return l, a, err
}

func TestReady(t *testing.T) {
	l, a, err := start(t, `[ "$1 $3" = "-config -ready-file" ] || exit 9
env | grep -q '^SRTWHEP_' && exit 8
echo '{"srt": "127.0.0.1:1", "http": "127.0.0.1:2", "metrics": "127.0.0.1:3"}' >"$4.tmp" && mv "$4.tmp" "$4"
exec sleep 30`)
	if err != nil {
		t.Fatal(err)
	}
	if a != (Addrs{SRT: "127.0.0.1:1", HTTP: "127.0.0.1:2", Metrics: "127.0.0.1:3"}) {
		t.Errorf("addrs %+v", a)
	}
	if b, err := os.ReadFile(l.ConfigFile); err != nil || string(b) != "logLevel: warn\n" {
		t.Errorf("config file %q, %v", b, err)
	}
}

func TestNotReady(t *testing.T) {
	for _, tc := range []struct{ name, script, want string }{
		{"exits first", "exit 3", "exited (exit status 3) before it was ready"},
		{"bad ready file", `echo '{"http": "x"}' >"$4"; exec sleep 30`, "want {\"srt\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := start(t, tc.script); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

func TestLoopbackConfig(t *testing.T) {
	var cfg struct {
		LogLevel string `yaml:"logLevel"`
		SRT      struct{ Listen string }
		WebRTC   struct {
			ListenIP         string `yaml:"listenIP"`
			HandshakeTimeout string `yaml:"handshakeTimeout"`
		} `yaml:"webrtc"`
		Metrics struct{ Listen string }
	}
	if err := yaml.Unmarshal([]byte(LoopbackConfig("  handshakeTimeout: 7s\n", "logLevel: warn\n")), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.LogLevel != "warn" || cfg.SRT.Listen != "127.0.0.1:0" || cfg.WebRTC.ListenIP != "127.0.0.1" ||
		cfg.WebRTC.HandshakeTimeout != "7s" || cfg.Metrics.Listen != "127.0.0.1:0" {
		t.Errorf("config read back as %+v", cfg)
	}
}
