package hub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// mkAU builds an access unit whose PTS is its sequence number, so tests can
// see gaps and duplicates.
func mkAU(seq int, idr bool) *av.AccessUnit {
	return &av.AccessUnit{PTS: int64(seq), IDR: idr, Size: 100, NALUs: [][]byte{make([]byte, 100)}}
}

func mustPublish(t testing.TB, h *Hub, path string) *Publisher {
	t.Helper()
	p, err := h.Publish(path, "127.0.0.1:5000")
	if err != nil {
		t.Fatalf("Publish(%q): %v", path, err)
	}
	t.Cleanup(p.Close)
	return p
}

func mustReader(t testing.TB, h *Hub, path, session string) *Reader {
	t.Helper()
	r, err := h.AddReader(path, session)
	if err != nil {
		t.Fatalf("AddReader(%q, %q): %v", path, session, err)
	}
	t.Cleanup(r.Close)
	return r
}

type got struct {
	seq     int
	idr     bool
	catchUp bool
}

// drain returns everything queued for r without waiting for more.
func drain(t *testing.T, r *Reader) []got {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out []got
	for {
		au, catchUp, err := r.Recv(ctx)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Recv: %v", err)
			}
			return out
		}
		out = append(out, got{int(au.PTS), au.IDR, catchUp})
	}
}

// checkSequence asserts the delivery contract for one reader: it starts at
// an IDR, never repeats or reorders, and resumes after a gap only at an IDR.
// Catch-up frames, if any, come first.
func checkSequence(seqs []got) error {
	for i, g := range seqs {
		if i == 0 {
			if !g.idr {
				return errors.New("first frame is not an IDR")
			}
			continue
		}
		prev := seqs[i-1]
		switch {
		case g.seq <= prev.seq:
			return fmt.Errorf("frame %d after %d: duplicate or out of order", g.seq, prev.seq)
		case g.seq != prev.seq+1 && !g.idr:
			return fmt.Errorf("gap %d→%d resumes on a non-IDR frame", prev.seq, g.seq)
		case g.catchUp && !prev.catchUp:
			return fmt.Errorf("catch-up frame %d after live frame %d", g.seq, prev.seq)
		}
	}
	return nil
}

func gaps(seqs []got) int {
	n := 0
	for i := 1; i < len(seqs); i++ {
		if seqs[i].seq != seqs[i-1].seq+1 {
			n++
		}
	}
	return n
}

// logCapture is a slog handler writing text to a buffer and signalling each
// record, so tests wait on records instead of sleeping.
type logCapture struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	notify chan struct{}
}

func newLogCapture() (*logCapture, *slog.Logger) {
	c := &logCapture{notify: make(chan struct{}, 1)}
	h := slog.NewTextHandler(lockedWriter{c}, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	})
	return c, slog.New(notifyHandler{Handler: h, notify: c.notify})
}

func (c *logCapture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

type lockedWriter struct{ c *logCapture }

func (w lockedWriter) Write(b []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	return w.c.buf.Write(b)
}

type notifyHandler struct {
	slog.Handler
	notify chan struct{}
}

func (n notifyHandler) Handle(ctx context.Context, r slog.Record) error {
	err := n.Handler.Handle(ctx, r)
	select {
	case n.notify <- struct{}{}:
	default:
	}
	return err
}

func (n notifyHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return notifyHandler{Handler: n.Handler.WithAttrs(as), notify: n.notify}
}

func (n notifyHandler) WithGroup(name string) slog.Handler {
	return notifyHandler{Handler: n.Handler.WithGroup(name), notify: n.notify}
}
