package hub

// Views of the hub's state that only tests need; production code reads a
// publisher's own Stats instead of looking paths up by name.

// HasPublisher reports whether a publisher streams to path.
func (h *Hub) HasPublisher(name string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	p, ok := h.paths[name]
	return ok && p.pub != nil
}

// ReadersTotal is the number of reserved and attached readers on all paths.
func (h *Hub) ReadersTotal() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.total
}
