// Package procstart starts the srtwhep binary on a config and waits until
// it has bound every listener, reading the addresses back from the file
// -ready-file names. The end-to-end tests (internal/testkit) and the
// soak (bench/cmd/whep-loadgen) both start the server this way; it imports no
// testing, so a command can use it.
package procstart

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Addrs are the addresses the server bound, as it writes them to its
// -ready-file. WebRTCTCP, Metrics and API are empty when disabled.
type Addrs struct {
	SRT       string `json:"srt"`
	HTTP      string `json:"http"`
	WebRTCUDP string `json:"webrtcUDP"`
	WebRTCTCP string `json:"webrtcTCP"`
	Metrics   string `json:"metrics"`
	API       string `json:"api"` // the control API; "" when off
}

// LoopbackConfig is the config of a server whose every listener is on an
// ephemeral loopback port, the addresses WaitReady then reads back;
// webrtc is more lines of the webrtc section (indented by two spaces) and
// extra more top-level YAML.
func LoopbackConfig(webrtc, extra string) string {
	return `srt:
  listen: "127.0.0.1:0"
http:
  listen: "127.0.0.1:0"
webrtc:
  listenIP: 127.0.0.1
  udpPort: 0
  tcpPort: 0
` + webrtc + `metrics:
  listen: "127.0.0.1:0"
api:
  listen: "127.0.0.1:0"
` + extra
}

// Launch is a server about to be started: its command and files.
type Launch struct {
	// Cmd runs `bin -config ConfigFile -ready-file ReadyFile`; the caller
	// sets its output and starts it.
	Cmd        *exec.Cmd
	ConfigFile string
	ReadyFile  string
}

// Prepare writes config to dir/srtwhep.yml and returns the command that
// runs bin on it, under wrap (e.g. "ip", "netns", "exec", NS) when given.
// The server refuses unknown SRTWHEP_* variables, and test and tool knobs
// share the prefix, so the command's environment has none of them.
func Prepare(dir, bin, config string, wrap ...string) (*Launch, error) {
	l := &Launch{ConfigFile: filepath.Join(dir, "srtwhep.yml"), ReadyFile: filepath.Join(dir, "ready.json")}
	if err := os.WriteFile(l.ConfigFile, []byte(config), 0o600); err != nil {
		return nil, err
	}
	argv := append(append([]string{}, wrap...), bin, "-config", l.ConfigFile, "-ready-file", l.ReadyFile)
	l.Cmd = exec.Command(argv[0], argv[1:]...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SRTWHEP_") {
			l.Cmd.Env = append(l.Cmd.Env, kv)
		}
	}
	return l, nil
}

// pollEvery is how often the ready file is looked for: often enough that
// a ready server is seen at once, rarely enough to cost nothing.
const pollEvery = 10 * time.Millisecond

// WaitReady waits until the started server has written its ready file
// and returns the addresses in it. exited is closed when the process has
// been waited for, and err then returns Wait's result. Listening on :0 and
// reading the addresses back is what keeps parallel runs from racing for
// ports. The server writes the file by rename, so a file that is there
// but does not parse is an error, not a file still being written.
func (l *Launch) WaitReady(ctx context.Context, timeout time.Duration, exited <-chan struct{}, err func() error) (Addrs, error) {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		b, rerr := os.ReadFile(l.ReadyFile)
		if rerr == nil {
			var a Addrs
			if jerr := json.Unmarshal(b, &a); jerr != nil || a.SRT == "" || a.HTTP == "" {
				return Addrs{}, fmt.Errorf("ready file %s: %v in %q: want {\"srt\":…,\"http\":…,…}", l.ReadyFile, jerr, b)
			}
			return a, nil
		}
		if !errors.Is(rerr, fs.ErrNotExist) {
			return Addrs{}, fmt.Errorf("read ready file: %w", rerr)
		}
		select {
		case <-tick.C:
		case <-exited:
			return Addrs{}, fmt.Errorf("srtwhep exited (%v) before it was ready", err())
		case <-deadline.C:
			return Addrs{}, fmt.Errorf("srtwhep wrote no ready file within %v", timeout)
		case <-ctx.Done():
			return Addrs{}, ctx.Err()
		}
	}
}
