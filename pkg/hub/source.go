package hub

import (
	"fmt"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// Source audio is the publisher's audio as it came in (AAC, MPEG audio or
// Opus), next to the Opus frames made for WebRTC. A reader that passes the
// stream on rather than playing it (an SRT reader remuxing MPEG-TS) takes
// it instead of Opus, so a stream read over SRT keeps the codec and the
// quality its publisher chose, and costs no transcoding. It follows the
// Opus rules: its own share of the GOP cache, never gated by video, a full
// queue costs one unit.

// CanRead reports what AddReader would answer now, without reserving
// anything: for a transport that must refuse a viewer precisely before it
// can reserve a slot (the SRT handshake). The answer may be stale by the
// time AddReader runs, which then decides.
func (h *Hub) CanRead(name string) error {
	if h.cfg.Admit != nil {
		if err := h.cfg.Admit(); err != nil {
			return fmt.Errorf("read %q: %w: %v", name, ErrServerFull, err)
		}
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	_, err := h.roomLocked(name)
	return err
}

// roomLocked returns the path a new reader of name would join, or why it
// may not. Called with Hub.mu held (read or write).
func (h *Hub) roomLocked(name string) (*path, error) {
	p, ok := h.paths[name]
	// A path waiting out its grace period keeps its viewers but takes no
	// new one: it may never get a publisher again, and what it will carry
	// (audio or not) is unknown until one comes.
	if !ok || p.pub == nil {
		return nil, fmt.Errorf("read %q: %w", name, ErrNoPublisher)
	}
	if err := h.capsLocked(name); err != nil {
		return nil, err
	}
	return p, nil
}

// capsLocked reports whether one more counted reader of name would pass
// the path's and the server's reader caps. Called with Hub.mu held.
func (h *Hub) capsLocked(name string) error {
	if h.cfg.MaxReaders != nil {
		if limit := h.cfg.MaxReaders(baseName(name)); limit > 0 && h.readersLocked(name) >= limit {
			return fmt.Errorf("read %q: %w (%d readers; raise maxReaders for the path)",
				name, ErrPathFull, limit)
		}
	}
	if h.cfg.MaxReadersTotal != nil {
		if limit := h.cfg.MaxReadersTotal(); limit > 0 && h.total >= limit {
			return fmt.Errorf("read %q: %w (%d readers in total)", name, ErrServerFull, limit)
		}
	}
	return nil
}

// SetSourceAudio declares whether the publisher sends source audio
// (WriteSourceAudio). Readers added afterwards size their queue for it,
// and SourceAudio tells a reader whether to wait for the track before it
// starts. It may be called from any goroutine.
func (pub *Publisher) SetSourceAudio(has bool) {
	pub.p.mu.Lock()
	if pub.p.gen == pub.gen {
		pub.p.hasSource.Store(has)
	}
	pub.p.mu.Unlock()
	if r := pub.rend.Load(); r != nil {
		r.SetSourceAudio(has)
	}
}

// WriteSourceAudio hands u, an audio unit as the publisher sent it, to
// every reader attached with AttachSource. The rules are WriteAudio's:
// call it from the goroutine that calls Write, it never blocks, a full
// queue costs that reader this unit, and u (with its Track, which must be
// set) is shared and must not be modified afterwards.
func (pub *Publisher) WriteSourceAudio(u *av.AudioUnit) {
	if u == nil || u.Track == nil {
		return
	}
	// Not counted, as before: the path's audio counters (AudioFramesIn)
	// are the Opus frames of WriteAudio.
	fanout(pub, u, (*path).updateSourceCache, nil, (*Reader).pushSource)
	pub.renditionAudio(nil, u)
}

// updateSourceCache is updateAudioCache for source units. Called with mu
// held.
func (p *path) updateSourceCache(u *av.AudioUnit) {
	p.recentSource[p.recentSourceNext] = u
	p.recentSourceNext = (p.recentSourceNext + 1) % recentAudioFrames
	switch {
	case !p.cacheValid:
	case u.PTS < p.cache[0].Video.PTS:
		// Muxed late: it plays before the picture a new reader starts at.
	case p.cacheSource >= p.audioCacheMax:
		p.resetCache()
	default:
		if n := len(u.Data) + frameOverhead; p.fits(u.PTS, n) {
			p.cache = append(p.cache, Frame{Source: u, CatchUp: true})
			p.cacheSource++
			p.cacheBytes += n
		}
	}
}

// cacheRecentSource adds the source units that arrived ahead of an IDR at
// pts, oldest first, to the cache that IDR just started. Called with mu
// held.
func (p *path) cacheRecentSource(pts int64) {
	for i := range recentAudioFrames {
		u := p.recentSource[(p.recentSourceNext+i)%recentAudioFrames]
		if u != nil && u.PTS >= pts && p.cacheSource < p.audioCacheMax {
			p.cache = append(p.cache, Frame{Source: u, CatchUp: true})
			p.cacheSource++
			p.cacheBytes += len(u.Data) + frameOverhead
		}
	}
}

// pushSource is pushAudio for a reader that takes source audio.
func (r *Reader) pushSource(u *av.AudioUnit, gen uint32) {
	if !r.wantSource {
		return
	}
	select {
	case r.queue <- Frame{Source: u, Gen: gen}:
		r.woken()
	default:
		r.dropAudio()
	}
}

// AttachSource is AttachAV for a reader that passes the stream on as it
// came: it takes the source audio units (Frame.Source) instead of the
// Opus frames, the cached GOP with the units from its IDR's PTS on, and
// live units whatever its video gate says.
func (r *Reader) AttachSource() {
	r.p.attach(r, false, true)
}

// SourceAudio reports whether the path's current publisher announced
// source audio. Unlike HasAudio it is read live: a reader kept across a
// publisher change asks it at the new publisher's first IDR, to know
// whether audio units are worth waiting for.
func (r *Reader) SourceAudio() bool { return r.p.hasSource.Load() }
