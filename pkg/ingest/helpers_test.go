package ingest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/events"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/srt"
)

func TestMain(m *testing.M) { testkit.Main(m, nil, nil) }

// srtMessage is what one SRT live message carries: 7 TS packets. memConn
// hands out no more per Read, as srt.Conn does.
const srtMessage = 7 * 188

// memConn is a publisher's connection carrying MPEG-TS from memory: the
// part of srt.Conn the pipeline uses, without a socket.
type memConn struct {
	id     srt.StreamID
	remote string
	dialed bool
	sockID int
	data   []byte

	// pauseAt makes Read stop at that offset (0: never) until resume is
	// closed; paused is closed once it got there, when every byte before
	// it has been handed to the demuxer.
	pauseAt        int
	paused, resume chan struct{}
	pauseOnce      sync.Once
	// then is a second pause, after the first: set before serve.
	then *memPause
	// bitrate, when set, paces Read to that many bit/s: a publisher
	// sending live.
	bitrate int
	// lateFrom, lateDrops: once Read has handed out the byte at lateFrom,
	// Stats reports lateDrops packets dropped, as SRT counts packets that
	// came after the latency before it hands over the ones behind them.
	lateFrom  int
	lateDrops int64
	// holdEOF, when set, makes Read wait at the end of data until it is
	// closed, so the pipeline's asynchronous stages catch up before the
	// publisher ends.
	holdEOF chan struct{}

	closed    chan struct{}
	closeOnce sync.Once
	mu        sync.Mutex
	off       int
	reason    string
}

// memPause is a pause of memConn's Read at an offset (see pauseAt).
type memPause struct {
	at             int
	paused, resume chan struct{}
	once           sync.Once
}

func newMemPause(at int) *memPause {
	return &memPause{at: at, paused: make(chan struct{}), resume: make(chan struct{})}
}

func newMemConn(path string, sockID int, data []byte) *memConn {
	return &memConn{id: srt.StreamID{Mode: srt.ModePublish, Path: path}, remote: "192.0.2.7:4000", sockID: sockID,
		data: data, paused: make(chan struct{}), resume: make(chan struct{}), closed: make(chan struct{})}
}

func (c *memConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	off := c.off
	c.mu.Unlock()
	if c.pauseAt > 0 && off == c.pauseAt {
		c.pauseOnce.Do(func() { close(c.paused) })
		select {
		case <-c.resume:
		case <-c.closed:
		}
	}
	if p := c.then; p != nil && off == p.at {
		p.once.Do(func() { close(p.paused) })
		select {
		case <-p.resume:
		case <-c.closed:
		}
	}
	select {
	case <-c.closed:
		return 0, io.EOF
	default:
	}
	if off >= len(c.data) && c.holdEOF != nil {
		select {
		case <-c.holdEOF:
		case <-c.closed:
		}
	}
	if off >= len(c.data) {
		c.setReason("publisher disconnected") // what srt.Conn says when the peer leaves
		return 0, io.EOF
	}
	end := min(len(c.data), off+srtMessage, off+len(p))
	if c.pauseAt > off {
		end = min(end, c.pauseAt)
	}
	if p := c.then; p != nil && p.at > off {
		end = min(end, p.at)
	}
	if c.bitrate > 0 {
		time.Sleep(time.Duration(end-off) * 8 * time.Second / time.Duration(c.bitrate))
	}
	n := copy(p, c.data[off:end])
	c.mu.Lock()
	c.off += n
	c.mu.Unlock()
	return n, nil
}

func (c *memConn) setReason(r string) {
	c.mu.Lock()
	if c.reason == "" {
		c.reason = r
	}
	c.mu.Unlock()
}

func (c *memConn) CloseWith(reason string) {
	c.setReason(reason)
	c.closeOnce.Do(func() { close(c.closed) })
}

func (c *memConn) EndReason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reason
}

func (c *memConn) Stats() srt.Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := srt.Stats{RTTMs: 40, LatencyMs: 120, Bytes: int64(c.off)}
	if c.lateDrops > 0 && c.off > c.lateFrom {
		st.PacketsDropped = c.lateDrops
	}
	return st
}

func (c *memConn) Path() string           { return c.id.Path }
func (c *memConn) Remote() string         { return c.remote }
func (c *memConn) StreamID() srt.StreamID { return c.id }
func (c *memConn) Dialed() bool           { return c.dialed }
func (c *memConn) SocketID() int          { return c.sockID }

// rig is a Manager with the real hub, policy, demuxer and transcoder
// behind it, recording its events and logs.
type rig struct {
	m    *Manager
	hub  *hub.Hub
	logs *testkit.LogBuffer

	mu     sync.Mutex
	events []events.Event
	// onEvent runs inside the Events callback, on the publisher's
	// goroutine: for publisher.connected that is after the path is claimed
	// and before the first access unit, so a reader attached there misses
	// nothing.
	onEvent func(events.Event)
}

func newRig(t testing.TB, cfg Config) *rig {
	t.Helper()
	r := &rig{logs: &testkit.LogBuffer{}}
	log := r.logs.Logger(slog.LevelDebug)
	r.hub = hub.New(hub.Config{Logger: log})
	if cfg.Policy == nil {
		cfg.Policy = auth.NewPolicy(auth.Rules{}, auth.ThrottleConfig{})
	}
	t.Cleanup(cfg.Policy.Close)
	cfg.Hub, cfg.Logger = r.hub, log
	cfg.Events = func(e events.Event) {
		r.mu.Lock()
		r.events = append(r.events, e)
		f := r.onEvent
		r.mu.Unlock()
		if f != nil {
			f(e)
		}
	}
	r.m = New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.hub.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel() // ends the paths still waiting out a grace period
		<-done
		if t.Failed() {
			t.Logf("logs:\n%s", r.logs.String())
		}
	})
	return r
}

func (r *rig) seen() []events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.events)
	for i := range out {
		out[i].Time = time.Time{}
	}
	return out
}

// serve runs c as a publisher on its own goroutine; the channel gets
// Serve's error.
func (r *rig) serve(t testing.TB, c *memConn) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.m.serve(t.Context(), c) }()
	// A test that failed with its publisher paused does not leave it
	// blocked in Read.
	t.Cleanup(func() { c.CloseWith("test over") })
	return done
}

// wait returns what done delivers, failing the test after a deadline.
func wait(t testing.TB, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10 s")
		return nil
	}
}

// reader adds a reader of path (the hub must have its publisher) and
// attaches it with attach.
func (r *rig) reader(t *testing.T, path string, attach func(*hub.Reader)) *hub.Reader {
	t.Helper()
	rd, err := r.hub.AddReader(path, "viewer")
	if err != nil {
		t.Errorf("AddReader: %v", err)
		return nil
	}
	t.Cleanup(rd.Close)
	attach(rd)
	return rd
}

// drain returns what rd has queued, without waiting for more: with a
// cancelled context queued frames still win.
func drain(rd *hub.Reader) []hub.Frame {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out []hub.Frame
	for {
		f, err := rd.RecvFrame(ctx)
		if err != nil {
			return out
		}
		out = append(out, f)
	}
}

// clip reads one of the ffmpeg clips pkg/tsdemux commits (see its
// testdata/gen.sh).
func clip(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "tsdemux", "testdata", name))
	if err != nil {
		t.Fatalf("%v (regenerate with pkg/tsdemux/testdata/gen.sh; needs ffmpeg: apt-get install -y ffmpeg)", err)
	}
	return b
}

// pathStats returns path's entry of m.Stats(), or false.
func pathStats(m *Manager, path string) (PathStats, bool) {
	for _, p := range m.Stats() {
		if p.Path == path {
			return p, true
		}
	}
	return PathStats{}, false
}
