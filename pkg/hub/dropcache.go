package hub

// DropCache forgets the path's cached GOP, so the next reader starts at
// the next IDR written instead. A publisher whose video pauses (its
// transcoder stopped while nobody watched) calls it: the cache would
// otherwise start the next viewer on pictures from before the pause and
// then jump. Readers already attached are not affected.
func (pub *Publisher) DropCache() {
	p := pub.p
	p.mu.Lock()
	if !p.closed && p.gen == pub.gen {
		p.resetCache()
	}
	p.mu.Unlock()
}
