package hub

import (
	"fmt"
	"strings"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// A path whose video some viewers cannot take as published (H.265 to a
// browser without an H.265 decoder) carries a second rendition: the same
// audio, the video transcoded to H.264. It is a path of its own, so each
// rendition keeps its own GOP cache, its own packetize-once payloads and
// its own queues, under the path's one reader cap, and viewers that can
// take the original keep it.
// Its name cannot be a path's (pkg/pathname refuses the space and the
// parentheses), so no publisher or viewer reaches it by name from
// outside; it shows in Paths under that name.
const transcodedSuffix = " (H.264)"

// TranscodedName is the hub name of name's H.264 rendition.
func TranscodedName(name string) string { return name + transcodedSuffix }

// baseName is the path a rendition belongs to: its limits (readers, GOP
// cache) are the path's own.
func baseName(name string) string { return strings.TrimSuffix(name, transcodedSuffix) }

// readersLocked counts the readers of the path name belongs to in both
// its renditions: its reader cap and its viewer count are the path's, not
// each rendition's. Called with Hub.mu held.
func (h *Hub) readersLocked(name string) int {
	base := baseName(name)
	n := 0
	for _, k := range [...]string{base, TranscodedName(base)} {
		if p, ok := h.paths[k]; ok {
			n += p.counted
		}
	}
	return n
}

// AddRendition publishes the path's H.264 rendition and returns its
// publisher, whose Write the transcoder calls. The path's audio (SetAudio,
// SetSourceAudio, WriteAudio, WriteSourceAudio on pub) goes to it as well,
// and closing pub closes it. A rendition left by an earlier publisher of
// the path is taken over, with its readers, as the path itself is. Call
// it from the publisher's goroutine, at most once.
//
// A publisher that no longer publishes the path (taken over, or closed:
// its demuxer may still be reading what was in flight) gets ErrEnded and
// no rendition: one made then would take its successor's rendition over,
// or, made after Close, be left behind with nobody to close it.
func (pub *Publisher) AddRendition() (*Publisher, error) {
	remote, ok := pub.current()
	if !ok {
		return nil, fmt.Errorf("rendition of %q: %w", pub.p.name, ErrEnded)
	}
	r, err := pub.h.PublishWith(TranscodedName(pub.p.name), remote, PublishOptions{Override: true, Grace: pub.grace})
	if err != nil {
		return nil, err
	}
	r.SetAudio(pub.p.hasAudio.Load())
	r.SetSourceAudio(pub.p.hasSource.Load())
	pub.rend.Store(r)
	if _, ok := pub.current(); !ok {
		// Taken over or closed in between: Close may have run before the
		// Store, so nothing else would close r.
		pub.DropRendition()
		return nil, fmt.Errorf("rendition of %q: %w", pub.p.name, ErrEnded)
	}
	return r, nil
}

// current reports whether pub still publishes its path, and the path's
// remote.
func (pub *Publisher) current() (remote string, ok bool) {
	pub.h.mu.RLock()
	defer pub.h.mu.RUnlock()
	return pub.p.remote, pub.p.pub == pub && pub.h.paths[pub.p.name] == pub.p
}

// DropRendition closes the rendition AddRendition made, ending its
// readers (no grace: the path no longer makes one), and stops the audio
// going to it.
func (pub *Publisher) DropRendition() {
	r := pub.rend.Swap(nil)
	if r == nil {
		return
	}
	r.grace = 0
	r.Close()
}

// HasRendition reports whether the path publishes an H.264 rendition now.
func (h *Hub) HasRendition(name string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	p := h.paths[TranscodedName(name)]
	return p != nil && p.pub != nil
}

// AddTranscodedReader is AddReader for name's H.264 rendition:
// ErrNoPublisher when the path makes none (video: passthrough, or its
// video plays as published).
func (h *Hub) AddTranscodedReader(name, session string) (*Reader, error) {
	return h.AddReader(TranscodedName(name), session)
}

// renditionAudio passes what the path's audio calls did on to its
// rendition, if it has one.
func (pub *Publisher) renditionAudio(af *av.AudioFrame, u *av.AudioUnit) {
	r := pub.rend.Load()
	if r == nil {
		return
	}
	if af != nil {
		r.WriteAudio(af)
	}
	if u != nil {
		r.WriteSourceAudio(u)
	}
}
