package hub

import (
	"fmt"
	"slices"
)

// A path's ladder is its video at lower sizes and rates, for viewers whose
// link cannot carry the source: each rung is a path of its own (its GOP
// cache, its packetize-once payloads), written by a transcoder that runs
// only while some viewer reads it. A viewer reads the rung it is switched
// to beside its reader of the path itself, which carries its audio and
// counts it against the path's caps: a rung's readers are extra readers,
// seen by the rung's demand (Stats().Readers) and nowhere else.

// Rung describes one rendition of a path's video.
type Rung struct {
	ID      string // "360p"; SourceRung for the path's own video
	Width   int
	Height  int
	Bitrate int // bit/s it needs, nominal
}

// SourceRung is the ID of the top of every ladder: the path as published.
const SourceRung = "source"

// RenditionName is the hub name of rung id of path name. Like
// TranscodedName it cannot be a path's (pkg/pathname refuses the space
// and the parentheses), so nobody reaches it from outside.
func RenditionName(name, id string) string { return name + " (" + id + ")" }

// SetLadder records the path's ladder, top (the source) first, for the
// viewers that switch between its rungs; nil: the path has none.
func (pub *Publisher) SetLadder(rungs []Rung) {
	pub.p.mu.Lock()
	defer pub.p.mu.Unlock()
	if pub.p.gen == pub.gen {
		pub.p.ladder = slices.Clone(rungs)
	}
}

// Ladder is what SetLadder last recorded for path name: nil when the
// path has no ladder (or no publisher).
func (h *Hub) Ladder(name string) []Rung {
	h.mu.RLock()
	p := h.paths[name]
	h.mu.RUnlock()
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ladder)
}

// AddLadderRendition publishes rung id of pub's path and returns its
// publisher, whose Write the rung's transcoder calls. It carries video
// only (its viewers take their audio from the path) and has no grace: a
// new publisher of the path makes its own rungs. Call it from the
// publisher's goroutine; the caller closes it. ErrEnded when pub no
// longer publishes its path.
func (pub *Publisher) AddLadderRendition(id string) (*Publisher, error) {
	remote, ok := pub.current()
	if !ok {
		return nil, fmt.Errorf("rendition %s of %q: %w", id, pub.p.name, ErrEnded)
	}
	return pub.h.PublishWith(RenditionName(pub.p.name, id), remote, PublishOptions{Override: true})
}

// AddLadderReader adds a reader of rung id of path name for a viewer of
// the path (session): it counts against no cap and in no total, since the
// viewer's reader of the path already does, but it is the rung's demand:
// its transcoder runs while such readers exist. Attach it (video only)
// before reading. ErrNoPublisher when the path has no such rung.
func (h *Hub) AddLadderReader(name, id, session string) (*Reader, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rn := RenditionName(name, id)
	p, ok := h.paths[rn]
	if !ok || p.pub == nil {
		return nil, fmt.Errorf("read %q: %w", rn, ErrNoPublisher)
	}
	r := newReader(h, p, session, h.cfg.QueueSize, 0)
	r.extra = true
	p.members = append(p.members, r)
	p.extra++
	return r, nil
}

// RequestLadderIDR asks rung id of path name for an IDR at its first
// picture presented after PTS after: a viewer moving onto the rung holds
// its picture at after and goes on from that IDR. A rung without a
// running transcoder ignores it (its first picture is an IDR anyway).
func (h *Hub) RequestLadderIDR(name, id string, after int64) {
	h.mu.RLock()
	p := h.paths[RenditionName(name, id)]
	h.mu.RUnlock()
	if p == nil {
		return
	}
	p.idrAfter.Store(after)
	p.idrWanted.Store(true)
}

// TakeIDRRequest returns what RequestLadderIDR asked of pub's path since
// the last call: the PTS the IDR must come after.
func (pub *Publisher) TakeIDRRequest() (after int64, ok bool) {
	if !pub.p.idrWanted.Swap(false) {
		return 0, false
	}
	return pub.p.idrAfter.Load(), true
}
