package edge

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/haivision/srtgo"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/events"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/srt"
	"github.com/srtwhep/srtwhep/pkg/tsdemux"
)

// The pulls below run without libsrt: Puller.dial hands out memLinks and
// Puller.sleep records the back-offs. A memLink's stream is a real ffmpeg
// clip demuxed in memory and published to the real hub, which is all a
// pull watches (readiness, readers, a publisher taking over).

// clipAUs is pkg/tsdemux's h264.ts demuxed: 50 pictures, IDRs at 0 and 30.
func clipAUs(t *testing.T) []*av.AccessUnit {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "tsdemux", "testdata", "h264.ts"))
	if err != nil {
		t.Fatalf("%v (regenerate with pkg/tsdemux/testdata/gen.sh; needs ffmpeg: apt-get install -y ffmpeg)", err)
	}
	var aus []*av.AccessUnit
	err = tsdemux.New(bytes.NewReader(data), tsdemux.Config{}).Run(t.Context(), func(au *av.AccessUnit) error {
		aus = append(aus, au)
		return nil
	})
	if err != nil || len(aus) != 50 {
		t.Fatalf("demuxing the clip: %d pictures, %v", len(aus), err)
	}
	return aus
}

// memLink is a connection to a source. With aus it publishes them to the
// hub as the ingest pipeline would, then holds the path until it is
// closed, hung up or taken over; without, it says nothing until closed.
// hangupAt0 ends it at once, before any picture.
type memLink struct {
	hub       *hub.Hub
	path      string
	aus       []*av.AccessUnit
	hangupAt0 bool

	hangup    chan struct{} // closed by the test: the source leaves
	closed    chan struct{}
	closeOnce sync.Once
	mu        sync.Mutex
	reason    string
}

func newMemLink(h *hub.Hub, path string, aus []*av.AccessUnit) *memLink {
	return &memLink{hub: h, path: path, aus: aus, hangup: make(chan struct{}), closed: make(chan struct{})}
}

func (l *memLink) Remote() string { return "192.0.2.9:7000" }

func (l *memLink) CloseWith(reason string) {
	l.mu.Lock()
	if l.reason == "" {
		l.reason = reason
	}
	l.mu.Unlock()
	l.closeOnce.Do(func() { close(l.closed) })
}

func (l *memLink) Close() error {
	l.CloseWith("closed by server")
	return nil
}

func (l *memLink) closedWith() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reason
}

func (l *memLink) Serve(ctx context.Context) error {
	if l.hangupAt0 {
		return nil
	}
	var replaced <-chan struct{}
	if l.aus != nil {
		pub, err := l.hub.PublishWith(l.path, l.Remote(), hub.PublishOptions{Grace: time.Second})
		if err != nil {
			return err
		}
		defer pub.Close()
		for _, au := range l.aus {
			pub.Write(au)
		}
		replaced = pub.Replaced()
	}
	select {
	case <-l.closed:
	case <-l.hangup:
	case <-replaced:
	case <-ctx.Done():
	}
	return nil
}

// memRig is newRig's puller (edge_test.go) with dials and back-offs the
// test decides.
type memRig struct {
	*rig

	mu     sync.Mutex
	dials  []srt.DialConfig
	sleeps []time.Duration
}

// newMemRig answers the puller's nth dial (from 0) with dial, and its nth
// back-off with sleep, which returns whether the pull goes on (nil: a
// back-off lasts until a demand kicks the pull or the test ends). Every path
// but live/none has src as its source. The pulls start from the test's
// Demand calls, after dial and sleep are in place.
func newMemRig(t *testing.T, src Source, dial func(n int) (link, error), sleep func(n int, ctx context.Context) bool) *memRig {
	t.Helper()
	r := &memRig{rig: newRig(t, func(path string) Source {
		if path == "live/none" {
			return Source{}
		}
		return src
	})}
	// Back-offs take no time here: every attempt's line is wanted.
	r.p.rlog.every = 0
	r.p.dial = func(_ context.Context, cfg srt.DialConfig) (link, error) {
		r.mu.Lock()
		n := len(r.dials)
		r.dials = append(r.dials, cfg)
		r.mu.Unlock()
		return dial(n)
	}
	r.p.sleep = func(pl *pull, ctx context.Context, d time.Duration) bool {
		r.mu.Lock()
		n := len(r.sleeps)
		r.sleeps = append(r.sleeps, d)
		r.mu.Unlock()
		if sleep != nil {
			return sleep(n, ctx)
		}
		// A demand's kick ends the back-off, as in (*pull).sleep: a
		// demand that came just after a failed attempt (an instant dial
		// here) waits for the next attempt's answer.
		select {
		case <-pl.kick:
			return true
		case <-ctx.Done():
			return false
		}
	}
	return r
}

// record returns the dials, the back-offs and the events (without their
// times) so far.
func (r *memRig) record() (dials []srt.DialConfig, sleeps []time.Duration, ev []events.Event) {
	ev = r.seen()
	for i := range ev {
		ev[i].Time = time.Time{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.dials), slices.Clone(r.sleeps), ev
}

// Dial errors as srt.Dial returns them.
func refused(reason int) error {
	return &srt.DialError{Addr: "192.0.2.9:7000", Reason: reason, Err: srtgo.EConnRej}
}

func noAnswer() error { return &srt.DialError{Addr: "192.0.2.9:7000", Err: srtgo.ENoServer} }
