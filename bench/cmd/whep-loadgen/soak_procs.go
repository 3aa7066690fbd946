package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/srtwhep/srtwhep/internal/procstart"
)

// makeSoakClip encodes a small clip once: the publisher then loops it with
// -c copy and costs almost nothing, leaving the CPU to the server.
func makeSoakClip(ctx context.Context, path string) error {
	cmd := exec.CommandContext(ctx, "ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y",
		"-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30:duration=10",
		"-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-b:v", "800k",
		"-g", "60", "-bf", "0", "-f", "mpegts", path)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ffmpeg (apt-get install -y ffmpeg) making the clip: %v\n%s", err, out)
	}
	return nil
}

// soakServer is the srtwhep process under test.
type soakServer struct {
	cmd   *exec.Cmd
	addrs procstart.Addrs
	done  chan struct{}
	err   error
}

func startSoakServer(ctx context.Context, bin, dir string, log io.Writer) (*soakServer, error) {
	// Metrics are on for go_goroutines; the automatic viewer limit is off
	// because the machine is shared and its CPU readings would refuse
	// viewers the soak needs.
	yml := procstart.LoopbackConfig("", "logLevel: warn\nreaders:\n  maxCPUPercent: 0\n")
	l, err := procstart.Prepare(dir, bin, yml)
	if err != nil {
		return nil, err
	}
	s := &soakServer{cmd: l.Cmd, done: make(chan struct{})}
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	s.addrs, err = l.WaitReady(ctx, 15*time.Second, s.done, func() error { return s.err })
	if err != nil {
		s.stop() // returns at once when it has exited
		return nil, err
	}
	return s, nil
}

func (s *soakServer) exited() (bool, error) {
	select {
	case <-s.done:
		return true, s.err
	default:
		return false, nil
	}
}

// stop ends the server as systemd would, killing it if it hangs.
func (s *soakServer) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// soakPublisher is ffmpeg looping the clip over SRT, restarted on a
// schedule: gracefully, then killed, alternately, since a crashed encoder
// leaves the server to notice by timeout and a stopped one says goodbye.
type soakPublisher struct {
	clip, url string
	mu        sync.Mutex
	n         int
}

func (p *soakPublisher) restarts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func (p *soakPublisher) run(ctx context.Context, every time.Duration) {
	for i := 0; ctx.Err() == nil; i++ {
		cmd := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin",
			"-re", "-stream_loop", "-1", "-i", p.clip, "-c", "copy", "-f", "mpegts", p.url)
		if err := cmd.Start(); err != nil {
			return
		}
		done := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(done)
		}()
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-done: // ffmpeg gave up (server busy, say): start again below
		}
		t.Stop()
		sig := syscall.SIGTERM
		if i%2 == 1 {
			sig = syscall.SIGKILL
		}
		_ = cmd.Process.Signal(sig)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		p.n++
		p.mu.Unlock()
		// A short gap, as an encoder's reconnect has.
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}
