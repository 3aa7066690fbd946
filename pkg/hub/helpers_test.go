package hub

import (
	"context"
	"errors"
	"fmt"
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
		au, catchUp, err := recvVideo(ctx, r)
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

// recvVideo is RecvFrame for a reader attached with Attach, which is
// handed video only; catchUp marks frames from the GOP cache.
func recvVideo(ctx context.Context, r *Reader) (au *av.AccessUnit, catchUp bool, err error) {
	f, err := r.RecvFrame(ctx)
	return f.Video, f.CatchUp, err
}
