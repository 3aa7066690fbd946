package hub

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// path is one publisher generation of a path name; a new publisher on the
// same name gets a new path, so stale readers can never see its frames.
type path struct {
	name   string
	remote string
	since  time.Time

	// members are the reserved and attached readers, guarded by Hub.mu
	// because the caps are decided there.
	members []*Reader

	mu     sync.Mutex
	info   av.StreamInfo
	closed bool
	// readers are the attached readers. The slice is copy-on-write: it is
	// replaced, never changed in place, so Write loops over a snapshot
	// without holding mu.
	readers []*Reader
	// cache holds the current GOP from its IDR while it stays within
	// cacheMax frames. It is updated under mu together with the snapshot
	// of readers, which is what lets Attach hand a reader cache+live with
	// no gap and no duplicate.
	cache      []*av.AccessUnit
	cacheValid bool
	cacheMax   int

	framesIn atomic.Uint64
	bytesIn  atomic.Uint64
	dropped  atomic.Uint64
}

func newPath(name, remote string, cacheMax int) *path {
	return &path{
		name:     name,
		remote:   remote,
		since:    time.Now(),
		cache:    make([]*av.AccessUnit, 0, cacheMax),
		cacheMax: cacheMax,
	}
}

// updateCache keeps the last GOP. Called with mu held.
func (p *path) updateCache(au *av.AccessUnit) {
	switch {
	case au.IDR:
		clear(p.cache) // drop references so old frames can be collected
		p.cache = append(p.cache[:0], au)
		p.cacheValid = true
	case !p.cacheValid:
	case len(p.cache) >= p.cacheMax:
		// A GOP this long cannot be replayed into a queue; a new reader
		// waits for the next IDR instead.
		clear(p.cache)
		p.cache = p.cache[:0]
		p.cacheValid = false
	default:
		p.cache = append(p.cache, au)
	}
}

// attach makes r receive frames: first the cached GOP, then live ones.
func (p *path) attach(r *Reader) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || r.state != stateReserved {
		return
	}
	r.gate = gateStart
	if p.cacheValid && len(p.cache) <= cap(r.queue)-len(r.queue) {
		for _, au := range p.cache {
			r.queue <- entry{au: au, catchUp: true} // fits: checked above, and nothing else pushes yet
		}
		r.gate = gateOpen
	}
	r.state = stateAttached
	r.attached.Store(true)
	// Clip forces append to copy, leaving snapshots held by Write intact.
	p.readers = append(slices.Clip(p.readers), r)
}

// detach stops delivery to r for good.
func (p *path) detach(r *Reader) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.state == stateAttached {
		if i := slices.Index(p.readers, r); i >= 0 {
			next := make([]*Reader, 0, len(p.readers)-1)
			next = append(next, p.readers[:i]...)
			p.readers = append(next, p.readers[i+1:]...)
		}
	}
	r.state = stateClosed
	r.attached.Store(false)
}

// Publisher is the write side of a path. Write and SetInfo are meant for
// the publisher's own goroutine; Close may come from anywhere.
type Publisher struct {
	h         *Hub
	p         *path
	closeOnce sync.Once
}

// SetInfo records what the stream is, for the API and metrics.
func (pub *Publisher) SetInfo(info av.StreamInfo) {
	pub.p.mu.Lock()
	pub.p.info = info
	pub.p.mu.Unlock()
}

// Write hands au to every attached reader. It never blocks on a reader: a
// full queue costs that reader frames up to the next IDR, nothing more. au
// must not be modified afterwards; every reader gets the same pointer.
func (pub *Publisher) Write(au *av.AccessUnit) {
	if au == nil {
		return
	}
	p := pub.p
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.updateCache(au)
	readers := p.readers
	p.mu.Unlock()

	p.framesIn.Add(1)
	p.bytesIn.Add(uint64(au.Size))
	for _, r := range readers {
		r.push(au)
	}
}

// Close ends every reader of the path with ErrEnded and frees the path for
// the next publisher. It is safe to call more than once.
func (pub *Publisher) Close() {
	pub.closeOnce.Do(func() { pub.h.endPath(pub.p) })
}

func (h *Hub) endPath(p *path) {
	h.mu.Lock()
	if h.paths[p.name] == p {
		delete(h.paths, p.name)
	}
	members := p.members
	p.members = nil
	for _, r := range members {
		r.released = true
		if r.pendingDrops.Load() > 0 {
			h.departed = append(h.departed, r)
		}
	}
	h.total -= len(members)
	h.mu.Unlock()

	p.mu.Lock()
	p.closed = true
	p.readers = nil
	clear(p.cache)
	p.cache = nil
	p.cacheValid = false
	p.mu.Unlock()

	for _, r := range members {
		r.end()
	}
}
