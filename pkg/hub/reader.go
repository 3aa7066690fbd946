package hub

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/srtwhep/srtwhep/pkg/av"
)

type readerState uint8

const (
	stateReserved readerState = iota // counted against the caps, receives nothing
	stateAttached
	stateClosed
)

// gate decides which frames may enter the queue.
type gate uint8

const (
	gateOpen  gate = iota
	gateStart      // joined without a usable cache: wait for an IDR, not a loss
	gateDrop       // overflowed: drop (and count) everything up to the next IDR
)

type entry struct {
	au      *av.AccessUnit
	catchUp bool
}

// Reader is one viewer's bounded queue on a path.
type Reader struct {
	h       *Hub
	p       *path
	session string

	queue   chan entry
	done    chan struct{}
	endOnce sync.Once

	state    readerState // guarded by p.mu
	released bool        // slot freed; guarded by Hub.mu
	// gate is only touched by the publisher's goroutine once the reader is
	// in the readers snapshot; attach sets it under p.mu before that, and
	// Write takes p.mu to load the snapshot, which orders the two.
	gate gate

	attached     atomic.Bool
	dropped      atomic.Uint64
	pendingDrops atomic.Uint64 // dropped since the last log line
	delivered    atomic.Uint64
}

func newReader(h *Hub, p *path, session string, queueSize int) *Reader {
	return &Reader{
		h:       h,
		p:       p,
		session: session,
		queue:   make(chan entry, queueSize),
		done:    make(chan struct{}),
	}
}

// push is the publisher's non-blocking hand-off. It drops to the next IDR
// rather than single frames, because a decoder fed a P frame whose
// reference was lost shows a smeared picture until the next IDR anyway.
func (r *Reader) push(au *av.AccessUnit) {
	if !au.IDR {
		switch r.gate {
		case gateStart:
			return
		case gateDrop:
			r.drop()
			return
		}
	}
	select {
	case r.queue <- entry{au: au}:
		r.gate = gateOpen
	default:
		r.drop()
		r.gate = gateDrop
	}
}

func (r *Reader) drop() {
	r.dropped.Add(1)
	r.pendingDrops.Add(1)
	r.p.dropped.Add(1)
}

func (r *Reader) end() {
	r.endOnce.Do(func() { close(r.done) })
}

// Attach starts delivery: the cached GOP from its IDR first (catchUp=true),
// then live frames with no gap and no duplicate. Without a usable cache the
// reader starts at the next IDR. Calling it again, or after the publisher
// left, does nothing.
func (r *Reader) Attach() {
	r.p.attach(r)
}

// Recv returns the next access unit. catchUp marks frames replayed from the
// GOP cache, which a sender may want to pace differently from live ones.
// It returns ErrEnded once the publisher or the reader closed, and ctx.Err()
// when ctx ends.
func (r *Reader) Recv(ctx context.Context) (au *av.AccessUnit, catchUp bool, err error) {
	select {
	case <-r.done:
		return nil, false, ErrEnded
	default:
	}
	// Queued frames win over a done ctx, so draining with a cancelled ctx
	// is deterministic.
	select {
	case e := <-r.queue:
		r.delivered.Add(1)
		return e.au, e.catchUp, nil
	default:
	}
	select {
	case e := <-r.queue:
		r.delivered.Add(1)
		return e.au, e.catchUp, nil
	case <-r.done:
		return nil, false, ErrEnded
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
}

// Backlog is how many access units wait in the queue. A sender uses it to
// tell whether it is behind the live edge (and should pace its catch-up)
// or at it.
func (r *Reader) Backlog() int { return len(r.queue) }

// Dropped is the number of frames this reader lost because it was too slow.
func (r *Reader) Dropped() uint64 {
	return r.dropped.Load()
}

// Close frees the reader's slot and ends its Recv with ErrEnded. It is safe
// to call more than once and after the publisher left.
func (r *Reader) Close() {
	r.h.release(r)
	r.p.detach(r)
	r.end()
}
