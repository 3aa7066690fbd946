package testkit

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/procstart"
)

// Addrs are the addresses the server bound, as it writes them to its
// -ready-file.
type Addrs = procstart.Addrs

// Server is the real srtwhep binary, running until the test ends.
type Server struct {
	*Process
	Addrs Addrs
	// ConfigFile is the file the server was started with; reload tests
	// rewrite it (atomically, as editors do).
	ConfigFile string

	stopOnce sync.Once
}

// LoopbackConfig is the config for a server whose every listener is on an
// ephemeral loopback port; extra (more top-level YAML) is appended.
func LoopbackConfig(extra string) string {
	return procstart.LoopbackConfig("", extra)
}

// StartServer writes config to a file, runs `bin -config FILE -ready-file
// READY` (under wrap, e.g. "ip", "netns", "exec", NS, when given) and
// returns once the server has written READY, that is once every listener
// is bound (see procstart). When the test ends the server gets SIGTERM and
// must exit 0 within 5 s.
func StartServer(t testing.TB, bin, config string, wrap ...string) *Server {
	t.Helper()
	l, err := procstart.Prepare(t.TempDir(), bin, config, wrap...)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Process: StartProcess(t, "srtwhep", l.Cmd), ConfigFile: l.ConfigFile}
	// Registered after StartProcess's kill, so it runs first.
	t.Cleanup(func() { s.Stop(t) })
	s.Addrs, err = l.WaitReady(context.Background(), 15*time.Second, s.done, func() error { return s.err })
	if err != nil {
		t.Fatalf("%v:\n%s", err, s.Log.String())
	}
	return s
}

// Stop sends SIGTERM, as systemd and Docker do, and fails the test unless
// the server exits 0 within 5 s. Only the first call acts.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.stopOnce.Do(func() {
		if done, err := s.Exited(); done {
			t.Errorf("srtwhep exited before the test ended: %v", err)
			return
		}
		if err := s.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("SIGTERM: %v", err)
			return
		}
		select {
		case <-s.done:
			if s.err != nil {
				t.Errorf("srtwhep exit after SIGTERM: %v, want 0:\n%s", s.err, s.Log.String())
			}
		case <-time.After(5 * time.Second):
			// SIGQUIT makes a Go program print every goroutine's stack
			// and exit: the log then shows where shutdown is stuck.
			_ = s.Cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case <-s.done:
			case <-time.After(5 * time.Second):
			}
			t.Errorf("srtwhep still running 5 s after SIGTERM (goroutines after SIGQUIT below):\n%s", s.Log.String())
		}
	})
}

// Kill ends the server with SIGKILL, as a crash, the OOM killer or a
// lost machine does, and waits for it to be gone; the end of the test
// then expects nothing more of it. Only the first Kill or Stop acts.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	s.stopOnce.Do(func() {
		if err := s.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Errorf("SIGKILL: %v", err)
			return
		}
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			t.Errorf("srtwhep still running 5 s after SIGKILL")
		}
	})
}

// URL is the server's HTTP address with path appended.
func (s *Server) URL(path string) string { return "http://" + s.Addrs.HTTP + path }

// APIURL is the control API's address with path appended.
func (s *Server) APIURL(path string) string { return "http://" + s.Addrs.API + path }

// SRTURL is the URL a publisher (ffmpeg, OBS) uses for streamid.
func (s *Server) SRTURL(streamid string) string {
	return "srt://" + s.Addrs.SRT + "?streamid=" + streamid + "&pkt_size=1316"
}
