package hub

import "time"

// PathState is what a puller of an edge asks of a path: whether a stream
// is there to read and whether anyone reads it.
type PathState struct {
	// Publisher: a publisher streams to the path (false while the path
	// waits out a grace period, or has none).
	Publisher bool
	// Playable: the publisher's stream has reached the hub with an IDR,
	// so a reader added now starts without waiting for the encoder.
	Playable bool
	// Readers are reserved and attached readers (not pending ones),
	// viewers kept through a grace period included, and those of the path's H.264 rendition
	// (rendition.go): an edge keeps its pull for them too.
	Readers int
	// LastFrame is when the current publisher last wrote a video frame
	// (zero before its first): a publisher whose encoder died keeps its
	// SRT connection until the read timeout, but its frames stop at once,
	// which is what a viewer's "stream interrupted" has to follow.
	LastFrame time.Time
}

// State reads one path's state; an unknown path has the zero state. It
// takes the hub's read lock and the path's lock briefly, so polling it a
// few times a second per pulled path costs nothing measurable.
func (h *Hub) State(name string) PathState {
	h.mu.RLock()
	defer h.mu.RUnlock()
	p, ok := h.paths[name]
	if !ok {
		return PathState{}
	}
	st := PathState{Publisher: p.pub != nil, Readers: h.readersLocked(name)}
	if st.Publisher {
		p.mu.Lock()
		st.Playable = p.sawIDR && !p.closed
		p.mu.Unlock()
		if ns := p.lastFrame.Load(); ns != 0 {
			st.LastFrame = time.Unix(0, ns)
		}
	}
	return st
}
