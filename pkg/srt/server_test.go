package srt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haivision/srtgo"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// session is what one Serve call saw.
type session struct {
	id      StreamID
	remote  string
	conns   []ConnInfo // Server.Conns() right after the conn started
	n       int64
	badSync int64 // offsets that should hold a 0x47 TS sync byte but do not
	head    []byte
	err     error // the Read error that ended the loop (io.EOF on a clean end)
}

// recordingServe reads a conn to its end with reads of bufSize bytes and
// reports what it saw on the returned channel.
func recordingServe(srvp *atomic.Pointer[Server], bufSize int, started chan<- *Conn) (func(context.Context, *Conn) error, <-chan session) {
	out := make(chan session, 4)
	return func(_ context.Context, c *Conn) error {
		s := session{id: c.StreamID(), remote: c.Remote(), conns: srvp.Load().Conns()}
		if started != nil {
			started <- c
		}
		buf := make([]byte, bufSize)
		for {
			n, err := c.Read(buf)
			for i := range n {
				if (s.n+int64(i))%188 == 0 && buf[i] != 0x47 {
					s.badSync++
				}
			}
			if len(s.head) < 188 {
				s.head = append(s.head, buf[:min(n, 188-len(s.head))]...)
			}
			s.n += int64(n)
			if err != nil {
				s.err = err
				out <- s
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		}
	}, out
}

func waitSession(t *testing.T, ch <-chan session, d time.Duration) session {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(d):
		t.Fatalf("Serve did not finish within %s", d)
		return session{}
	}
}

func TestFFmpegPublish(t *testing.T) {
	var srvp atomic.Pointer[Server]
	serve, sessions := recordingServe(&srvp, 4096, nil)
	var admitted atomic.Pointer[Request]
	r := startServer(t, Config{
		Latency: 120 * time.Millisecond,
		Serve:   serve,
		Admit: func(req Request) error {
			admitted.Store(&req)
			return nil
		},
	})
	srv := r.srv
	srvp.Store(srv)

	url := "srt://127.0.0.1:" + strconv.Itoa(srv.Addr().Port) + "?streamid=publish:live/t&pkt_size=1316"
	ffmpeg := testkit.StartFFmpeg(t, "-re",
		"-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-t", "3",
		"-c:v", "libx264", "-preset", "ultrafast", "-bf", "0", "-g", "30", "-f", "mpegts", url)
	if err := ffmpeg.Wait(t, 30*time.Second); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, ffmpeg.Log.String())
	}

	s := waitSession(t, sessions, 15*time.Second)
	if s.err != io.EOF {
		t.Fatalf("Serve's Read ended with %v, want io.EOF", s.err)
	}
	if s.n == 0 || s.n%188 != 0 {
		t.Fatalf("read %d bytes, want a positive multiple of 188", s.n)
	}
	if s.head[0] != 0x47 || s.badSync != 0 {
		t.Fatalf("first byte %#x, %d packets without the 0x47 sync byte", s.head[0], s.badSync)
	}
	if s.id != (StreamID{Mode: ModePublish, Path: "live/t"}) {
		t.Fatalf("StreamID() = %+v", s.id)
	}
	req := admitted.Load()
	if req == nil || req.StreamID.Path != "live/t" || req.Remote != s.remote ||
		!strings.HasPrefix(req.Remote, "127.0.0.1:") {
		t.Fatalf("Admit saw %+v, conn remote %q", req, s.remote)
	}
	if len(s.conns) != 1 || s.conns[0].Path != "live/t" || s.conns[0].Remote != s.remote {
		t.Fatalf("Conns() while streaming = %+v", s.conns)
	}

	r.log.wait(t, 5*time.Second, "publisher connected", func(l logLine) bool {
		return l.msg == "publisher connected" && l.attrs["path"] == "live/t" && l.attrs["remote"] == s.remote
	})
	closed := r.log.wait(t, 5*time.Second, "publisher closed", func(l logLine) bool {
		return l.msg == "publisher closed" && l.attrs["path"] == "live/t"
	})
	if closed.attrs["reason"] != "publisher disconnected" || closed.attrs["bytes"] != strconv.FormatInt(s.n, 10) {
		t.Fatalf("closed log %v, want reason \"publisher disconnected\" and bytes=%d", closed.attrs, s.n)
	}
	if got := srv.Conns(); len(got) != 0 {
		t.Fatalf("Conns() after the end = %+v", got)
	}
}

// tsMessage is one SRT live message: 7 TS packets whose bodies carry seq.
func tsMessage(seq byte) []byte {
	b := make([]byte, 7*188)
	for i := range b {
		b[i] = seq
		if i%188 == 0 {
			b[i] = 0x47
		}
	}
	return b
}

// dialCaller connects a test's caller, a publisher or a reader with any
// streamid, to addr.
func dialCaller(addr *net.UDPAddr, cfg DialConfig) (*srtgo.SrtSocket, error) {
	cfg.Addr = addr.String()
	return DialSocket(context.Background(), cfg)
}

// closeCaller closes a caller socket dialCaller returned.
func closeCaller(s *srtgo.SrtSocket) { CloseSocket(s) }

func TestShutdownWhileStreaming(t *testing.T) {
	var srvp atomic.Pointer[Server]
	started := make(chan *Conn, 1)
	serve, sessions := recordingServe(&srvp, 4096, started)
	r := startServer(t, Config{Serve: serve})
	srvp.Store(r.srv)

	sock, err := dialCaller(r.srv.Addr(), DialConfig{StreamID: "publish:live/down"})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	// The publisher keeps writing until the server drops it.
	stopWriting := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			if _, err := sock.Write(tsMessage(byte(i))); err != nil {
				return
			}
			select {
			case <-tick.C:
			case <-stopWriting:
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(stopWriting)
		<-writerDone
		closeCaller(sock)
	})

	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("publisher never reached Serve")
	}
	waitBytes(t, r.srv, 1)
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5 s of cancel while a publisher streamed")
	}
	if r.err != nil {
		t.Fatalf("Run returned %v on a clean shutdown", r.err)
	}
	s := waitSession(t, sessions, time.Second) // Run waited for Serve
	if s.err != io.EOF || s.n == 0 {
		t.Fatalf("Serve read %d bytes and ended with %v, want data then io.EOF", s.n, s.err)
	}
	closed := r.log.wait(t, time.Second, "publisher closed", func(l logLine) bool { return l.msg == "publisher closed" })
	if closed.attrs["reason"] != "server shutdown" {
		t.Fatalf("closed log %v, want reason \"server shutdown\"", closed.attrs)
	}
}

// TestCloseWith: closing a publisher's conn from another goroutine (the
// control API's kick) ends its Read with io.EOF and logs the given reason.
// TestCallerLeavingBeforeAccept: callers that close as soon as they are
// connected, often before the server accepts them, do not hold up the
// ones after them. The accept loop used to wait 100 ms after each such
// failed accept, while libsrt's backlog (16) filled and refused over
// half of 200 callers one after another with "Listener's backlog
// exceeded (5)".
func TestCallerLeavingBeforeAccept(t *testing.T) {
	r := startServer(t, Config{Serve: holdServe, AdmitRead: func(Request) error { return nil },
		ServeRead: func(ctx context.Context, _ *Conn) { <-ctx.Done() }})
	const callers = 100
	failed := 0
	var first error
	for range callers {
		s, err := dialCaller(r.srv.Addr(), DialConfig{StreamID: "read:live/x"})
		if err != nil {
			if failed++; first == nil {
				first = err
			}
			continue
		}
		closeCaller(s)
	}
	if failed > 0 {
		t.Fatalf("%d of %d callers failed, the first with: %v", failed, callers, first)
	}
}

func TestCloseWith(t *testing.T) {
	var srvp atomic.Pointer[Server]
	started := make(chan *Conn, 1)
	serve, sessions := recordingServe(&srvp, 4096, started)
	r := startServer(t, Config{Serve: serve})
	srvp.Store(r.srv)

	sock, err := dialCaller(r.srv.Addr(), DialConfig{StreamID: "publish:live/k"})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer closeCaller(sock)
	select {
	case c := <-started:
		c.CloseWith("kicked")
	case <-time.After(5 * time.Second):
		t.Fatal("publisher never reached Serve")
	}
	s := waitSession(t, sessions, 5*time.Second)
	if s.err != io.EOF {
		t.Fatalf("Read after Kick returned %v, want io.EOF", s.err)
	}
	closed := r.log.wait(t, 5*time.Second, "publisher closed", func(l logLine) bool { return l.msg == "publisher closed" })
	if closed.attrs["reason"] != "kicked" || closed.attrs["path"] != "live/k" {
		t.Fatalf("closed log %v, want reason kicked", closed.attrs)
	}
}

func TestReadTimeout(t *testing.T) {
	var srvp atomic.Pointer[Server]
	serve, sessions := recordingServe(&srvp, 4096, nil)
	r := startServer(t, Config{Serve: serve, ReadTimeout: 600 * time.Millisecond})
	srvp.Store(r.srv)

	sock, err := dialCaller(r.srv.Addr(), DialConfig{StreamID: "publish:live/idle"})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer closeCaller(sock)
	if _, err := sock.Write(tsMessage(7)); err != nil {
		t.Fatalf("write: %v", err)
	}
	// Then silence: the connection stays up (libsrt keepalives) but idle.
	s := waitSession(t, sessions, 10*time.Second)
	if !errors.Is(s.err, ErrReadTimeout) || s.n != 7*188 {
		t.Fatalf("Serve read %d bytes, ended with %v; want 1316 bytes then ErrReadTimeout", s.n, s.err)
	}
	closed := r.log.wait(t, 5*time.Second, "publisher closed", func(l logLine) bool { return l.msg == "publisher closed" })
	if strings.Contains(r.log.dump(), "nothing to read") {
		t.Fatal("libsrt's per-RCVTIMEO \"nothing to read\" warning reached the log")
	}
	if closed.level != slog.LevelWarn || !strings.Contains(closed.attrs["reason"], "no data for 600ms") {
		t.Fatalf("closed log %s %v", closed.level, closed.attrs)
	}
}

func TestNewValidates(t *testing.T) {
	serve := func(context.Context, *Conn) error { return nil }
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Listen: "8890", Serve: serve}, "use HOST:PORT"},
		{Config{Listen: ":99999", Serve: serve}, "port must be 0-65535"},
		{Config{Listen: "localhost:8890", Serve: serve}, "host must be an IP address"},
		{Config{Listen: ":8890"}, "Serve is required"},
		{Config{Listen: ":8890", Serve: serve, Latency: -time.Second}, "must not be negative"},
		{Config{Listen: ":8890", Serve: serve, PBKeyLen: 20}, "must be 0, 16, 24 or 32"},
	} {
		_, err := New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := New(Config{Listen: ":0", Serve: serve}); err != nil {
		t.Fatalf("New with a valid config: %v", err)
	}
}

func TestListenPortInUse(t *testing.T) {
	r := startServer(t, Config{Serve: func(context.Context, *Conn) error { return nil }})
	srv, err := New(Config{Listen: r.srv.Addr().String(), Serve: func(context.Context, *Conn) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	err = srv.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "is the port in use?") {
		t.Fatalf("Run on a busy port = %v, want a bind error", err)
	}
}

// waitBytes waits until the only publisher has delivered at least n bytes.
func waitBytes(t *testing.T, srv *Server, n int64) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("the server to receive %d bytes", n), func() bool {
		cs := srv.Conns()
		return len(cs) == 1 && cs[0].Stats.Bytes >= n
	})
}
