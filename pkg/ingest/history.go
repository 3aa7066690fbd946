package ingest

// What a path keeps of its ended publishers, and its bounds.

import (
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// history is what remains of a path's ended publishers.
type history struct {
	totals Totals
	info   av.StreamInfo
	// The last publisher's audio codecs, so a path between publishers
	// still says what it carried, like its video info.
	audioIn, audioOut string
	lastSeen          time.Time
}

// retire folds an ended publisher's counters into its path's history.
func (m *Manager) retire(path string, p *publisher) {
	totals := p.totals()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.live[path] == p {
		delete(m.live, path)
	} else {
		m.dropPendingLocked(path, p)
	}
	if p.hubPub.Load() == nil {
		return // refused before it published: nothing to remember
	}
	h := m.past[path]
	if h == nil {
		h = &history{}
		m.past[path] = h
	}
	h.totals.add(totals)
	if info := p.info.Load(); info != nil {
		h.info = *info
	}
	h.audioIn, h.audioOut = p.audio.codecs()
	h.lastSeen = time.Now()
	m.pruneLocked(h.lastSeen)
}

// pruneLocked forgets paths whose publisher left more than recentFor ago
// and, past maxRemembered, the longest-gone ones.
func (m *Manager) pruneLocked(now time.Time) {
	for name, h := range m.past {
		if now.Sub(h.lastSeen) > recentFor {
			delete(m.past, name)
		}
	}
	evictOldest(m.past, maxRemembered, func(h *history) time.Time { return h.lastSeen })
}

// evictOldest deletes the entries of m with the earliest times until at
// most n are left: the bound on what probing path names can make a
// manager remember.
func evictOldest[V any](m map[string]V, n int, at func(V) time.Time) {
	for len(m) > n {
		var oldest string
		for name, v := range m {
			if oldest == "" || at(v).Before(at(m[oldest])) {
				oldest = name
			}
		}
		delete(m, oldest)
	}
}
