package hostile

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/srtcall"
	"github.com/srtwhep/srtwhep/internal/testkit"
)

// publisherFrom is a real publisher whose SRT connection leaves from one
// source address (ffmpeg cannot bind its caller, so ffmpeg encodes to a
// pipe and a libsrt caller bound to ip sends what it writes).
type publisherFrom struct {
	done chan struct{} // closed when the pump has stopped
	err  error         // why it stopped, set before done closes
	// Stop ends the publisher (ffmpeg and its connection) now, as an
	// encoder that blinks; the test's end does it otherwise.
	Stop func()
}

// publishFrom connects a libsrt caller from ip to the server as
// streamid and pumps the 30 fps H.264 test pattern into it until the
// connection ends or the test does. A refused connect is returned as the
// caller's error (a *srtcall.RejectedError carries the reject reason).
func publishFrom(t *testing.T, srv *testkit.Server, ip net.IP, streamid string) (*publisherFrom, error) {
	t.Helper()
	addr, err := net.ResolveUDPAddr("udp", srv.Addrs.SRT)
	if err != nil {
		t.Fatal(err)
	}
	sock, err := srtcall.Dial(addr, srtcall.Options{StreamID: streamid, LocalIP: ip})
	if err != nil {
		return nil, err
	}
	closeSock := sync.OnceFunc(func() { srtcall.Close(sock) })
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Fatal("ffmpeg not found: apt-get install -y ffmpeg")
	}
	cmd := exec.Command(ffmpeg, append(append([]string{"-hide_banner", "-loglevel", "error"},
		testkit.LoopArgs(testPatternClip(t))...), "-f", "mpegts", "pipe:1")...)
	cmd.Stdout = pw
	logs := &testkit.LogBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = pw.Close() // ffmpeg holds its own copy
	p := &publisherFrom{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		// One SRT message is seven TS packets, as ffmpeg's pkt_size=1316.
		buf := make([]byte, 7*188)
		for {
			if _, err := io.ReadFull(pr, buf); err != nil {
				p.err = err
				return
			}
			if _, err := sock.Write(buf); err != nil {
				p.err = err
				return
			}
		}
	}()
	p.Stop = sync.OnceFunc(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = pr.Close()
		closeSock()
		<-p.done
	})
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() && !errors.Is(p.err, os.ErrClosed) {
			t.Logf("publisher from %v ended: %v; ffmpeg: %s", ip, p.err, logs.String())
		}
	})
	return p, nil
}

// minWindow is the shortest span a bystander Check measures over: an
// attack that is refused at once leaves too few pictures for a rate.
const minWindow = 2 * time.Second

// waitWindow lets at least minWindow pass since the bystander's last
// measurement, the window its Check then measures (not a wait for a
// state).
func (b *bystander) waitWindow() { time.Sleep(time.Until(b.since.Add(minWindow))) }
