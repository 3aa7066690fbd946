package hub

import (
	"fmt"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// PublishOptions say how a path changes hands.
type PublishOptions struct {
	// Override lets the new publisher take a busy path over at once: the
	// old one's writes are ignored from then on and its Replaced channel
	// closes, so its owner can hang up on it. An encoder that reconnects
	// after a network blip would otherwise be refused until the server
	// notices that the old connection is dead.
	Override bool
	// Grace is how long the path keeps its readers after this publisher
	// leaves, waiting for the next one; 0 ends them at once.
	Grace time.Duration
}

// PublishWith claims path for a new publisher. A path that has readers
// from an earlier publisher (taken over, or within its grace period) keeps
// them: each starts the new stream at its first IDR, and its frames carry a
// new Frame.Gen.
func (h *Hub) PublishWith(name, remote string, opts PublishOptions) (*Publisher, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.paths[name]
	if !ok {
		p = newPath(name, remote, h.cfg.GOPCacheFrames, h.log)
		p.limits = h.gopLimits(name)
		h.paths[name] = p
		pub := &Publisher{h: h, p: p, grace: opts.Grace, replaced: make(chan struct{})}
		p.pub, p.pubs = pub, 1
		return pub, nil
	}
	old := p.pub
	if old != nil && !opts.Override {
		return nil, fmt.Errorf("publish %q: %w", name, ErrPathBusy)
	}
	if p.grace != nil {
		p.grace.Stop()
		p.grace = nil
	}
	if old != nil {
		old.freeze()
		close(old.replaced)
	}
	gen := p.nextGen()
	p.mu.Lock()
	p.limits = h.gopLimits(name)
	p.mu.Unlock()
	p.remote, p.since = remote, time.Now()
	pub := &Publisher{h: h, p: p, gen: gen, grace: opts.Grace, replaced: make(chan struct{}), base: p.counters()}
	p.pub = pub
	p.pubs++
	return pub, nil
}

// nextGen starts a new generation: what the cache and the stream info held
// belongs to the old publisher, and every reader waits for the new one's
// first IDR, since a P frame of the new stream cannot follow the old one's
// pictures. Holding wmu means no Write is pushing meanwhile, so the gates,
// which only the writing goroutine touches, can be reset here. Called with
// Hub.mu held.
func (p *path) nextGen() uint32 {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	p.resetCache()
	p.cacheWarned = false
	p.sawIDR = false
	p.lastFrame.Store(0)
	clear(p.recentAudio[:])
	p.recentNext = 0
	clear(p.recentSource[:])
	p.recentSourceNext = 0
	p.hasSource.Store(false)
	p.info = av.StreamInfo{}
	p.hasAudio.Store(false)
	for _, r := range p.readers {
		r.gate = gateStart
	}
	return p.gen
}

// Replaced is closed when a newer publisher has taken the path over; the
// owner of this one should then hang up on it.
func (pub *Publisher) Replaced() <-chan struct{} { return pub.replaced }

// freeze fixes the publisher's counters at the moment it stops being its
// path's publisher. Called with Hub.mu held.
func (pub *Publisher) freeze() {
	if pub.final.Load() == nil {
		s := pub.p.counters().minus(pub.base)
		s.Readers = 0
		pub.final.Store(&s)
	}
}

// leave is Close: the path waits out the publisher's grace period when it
// has readers to keep, and ends otherwise.
func (h *Hub) leave(pub *Publisher) {
	p := pub.p
	h.mu.Lock()
	if p.pub != pub {
		h.mu.Unlock() // taken over, or the path already ended
		return
	}
	pub.freeze()
	if pub.grace <= 0 || len(p.members) == 0 || h.paths[p.name] != p {
		members := h.removePathLocked(p)
		h.mu.Unlock()
		h.finishPath(p, members)
		return
	}
	p.pub = nil
	// A new generation at once, so nothing the departed publisher's
	// goroutine may still write reaches the readers.
	p.nextGen()
	pubs := p.pubs
	p.grace = time.AfterFunc(pub.grace, func() { h.expire(p, pubs) })
	h.mu.Unlock()
	h.log.Info("publisher left; keeping its viewers for the next one",
		"path", p.name, "grace", pub.grace.String())
}

// expire ends p when its grace period passed with no new publisher.
func (h *Hub) expire(p *path, pubs uint64) {
	h.mu.Lock()
	if p.pub != nil || p.pubs != pubs || h.paths[p.name] != p {
		h.mu.Unlock()
		return
	}
	p.grace = nil
	members := h.removePathLocked(p)
	h.mu.Unlock()
	h.log.Info("no publisher within the grace period; ending its viewers", "path", p.name, "viewers", len(members))
	h.finishPath(p, members)
}

// endHeld ends every path waiting out a grace period, so no grace timer
// outlives the hub's Run.
func (h *Hub) endHeld() {
	h.mu.Lock()
	var held []*path
	for _, p := range h.paths {
		if p.pub == nil {
			held = append(held, p)
		}
	}
	ended := make([][]*Reader, len(held))
	for i, p := range held {
		ended[i] = h.removePathLocked(p) // stops the timer too
	}
	h.mu.Unlock()
	for i, p := range held {
		h.finishPath(p, ended[i])
	}
}
