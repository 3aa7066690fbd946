package whepevents

import (
	"bytes"
	"context"
	"net/url"
	"time"

	"github.com/srtwhep/srtwhep/pkg/hub"
)

// How path state becomes events. The hub is polled rather than asked for
// callbacks: a publisher whose encoder died writes nothing and calls
// nothing, so "inactive" needs a clock anyway, and one ticker over the
// paths that have event streams costs no goroutine per path and keeps the
// publisher's hot path free of subscriber lists.
var (
	// pollEvery is how often the watcher reads the state of the paths that
	// have event streams.
	pollEvery = 100 * time.Millisecond
	// staleAfter: a publisher whose last frame is older than this is
	// reported inactive. A little over a second, so a 1 s GOP's pause or a
	// network hiccup does not flap it, and well under the 2 s after which
	// a viewer wants to be told.
	staleAfter = 1500 * time.Millisecond
	// viewerCountEvery limits viewercount to one a second per path.
	viewerCountEvery = time.Second
	// layersEvery is how often the watcher reads the layers of the
	// sessions whose streams asked for them: a switch the estimator made
	// shows within it (a pin, at once: LayersChanged). Each read is a
	// session lookup and a small JSON, so at the bound of open streams
	// (Config.MaxStreams) this stays a few thousand a second.
	layersEvery = 500 * time.Millisecond
)

// maxEventStreamsPerSession: a player needs one; two lets a page reopen
// its stream before the old one's DELETE has landed.
const maxEventStreamsPerSession = 2

// pathEvents is what the watcher last reported on one path.
type pathEvents struct {
	streams   int
	live      bool
	count     int // viewercount last sent
	countAt   time.Time
	countSeen bool
}

// Errors of open, mapped to answers in http.go.
type openResult int

const (
	opened openResult = iota
	sessionFull
	serverFull
	shutDown
)

// open registers a stream for session on path and queues what is true
// right now: active when the publisher is live (never an initial
// inactive, as the extension asks), and the viewer count.
func (e *Streams) open(session, path string, want uint8) (*eventStream, openResult) {
	st := e.cfg.State(path)
	now := time.Now()
	e.mu.Lock()
	switch {
	case e.closed:
		e.mu.Unlock()
		return nil, shutDown
	case len(e.bySession[session]) >= maxEventStreamsPerSession:
		e.mu.Unlock()
		return nil, sessionFull
	case len(e.byID) >= e.cfg.MaxStreams:
		e.mu.Unlock()
		return nil, serverFull
	}
	es := newEventStream(newID(), session, path, want)
	e.byID[es.id] = es
	e.bySession[session] = append(e.bySession[session], es)
	pe := e.paths[path]
	if pe == nil {
		pe = &pathEvents{live: isLive(st, now), count: st.Readers, countAt: now, countSeen: true}
		e.paths[path] = pe
	}
	pe.streams++
	live, count := pe.live, pe.count
	e.mu.Unlock()
	if live {
		es.push(newEvent(evActive, struct{}{}))
	}
	es.push(viewerCountEvent(count))
	e.sendLayers(es)
	return es, opened
}

// sendLayers queues the session's layers event on es when it asked for
// layers and they changed since the last one queued.
func (e *Streams) sendLayers(es *eventStream) {
	if e.cfg.Layers == nil || es.want&eventBit(evLayers) == 0 {
		return
	}
	es.layersMu.Lock()
	defer es.layersMu.Unlock()
	data, ok := e.cfg.Layers(es.path, es.session)
	if !ok || bytes.Equal(es.layers, data) {
		return
	}
	es.layers = data
	es.push(event{typ: evLayers, data: data})
}

// LayersChanged sends the session's layers event now, to its streams
// that asked for it: a player that pinned a layer sees the pin at once
// (wheplayer.Config.Pinned).
func (e *Streams) LayersChanged(path, session string) {
	e.mu.Lock()
	list := append([]*eventStream(nil), e.bySession[session]...)
	e.mu.Unlock()
	for _, es := range list {
		if es.path == path {
			e.sendLayers(es)
		}
	}
}

// pollLayers reads the layers of every session with a stream that asked
// for them: one goroutine, the watcher's, whatever the number.
func (e *Streams) pollLayers() {
	if e.cfg.Layers == nil {
		return
	}
	bit := eventBit(evLayers)
	e.mu.Lock()
	list := make([]*eventStream, 0, len(e.byID))
	for _, es := range e.byID {
		if es.want&bit != 0 {
			list = append(list, es)
		}
	}
	e.mu.Unlock()
	for _, es := range list {
		e.sendLayers(es)
	}
}

func viewerCountEvent(n int) event {
	return newEvent(evViewerCount, map[string]int{"viewercount": n})
}

// isLive: a publisher is there, its stream has reached the hub with an
// IDR (a new publisher after a handover is live only from its first IDR,
// when viewers see pictures again), and its frames still come.
func isLive(st hub.PathState, now time.Time) bool {
	return st.Publisher && st.Playable && now.Sub(st.LastFrame) < staleAfter
}

func (e *Streams) lookup(id string) *eventStream {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.byID[id]
}

// remove ends the stream and forgets it.
func (e *Streams) remove(es *eventStream) {
	e.mu.Lock()
	e.removeLocked(es)
	e.mu.Unlock()
	es.end()
}

func (e *Streams) removeLocked(es *eventStream) {
	if e.byID[es.id] != es {
		return
	}
	delete(e.byID, es.id)
	list := e.bySession[es.session]
	for i, x := range list {
		if x == es {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(e.bySession, es.session)
	} else {
		e.bySession[es.session] = list
	}
	if pe := e.paths[es.path]; pe != nil {
		if pe.streams--; pe.streams <= 0 {
			delete(e.paths, es.path)
		}
	}
}

// SessionEnded ends the session's streams: the extension ties them to
// their WHEP resource. The WHEP server calls it (whep.Extension).
func (e *Streams) SessionEnded(session string) {
	e.mu.Lock()
	list := append([]*eventStream(nil), e.bySession[session]...)
	for _, es := range list {
		e.removeLocked(es)
	}
	e.mu.Unlock()
	for _, es := range list {
		es.end()
	}
}

// open streams.
func (e *Streams) len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.byID)
}

// broadcast pushes ev to every stream (of path, when path is not "").
func (e *Streams) broadcast(path string, ev event) int {
	e.mu.Lock()
	var list []*eventStream
	for _, es := range e.byID {
		if path == "" || es.path == path {
			list = append(list, es)
		}
	}
	e.mu.Unlock()
	for _, es := range list {
		es.push(ev)
	}
	return len(list)
}

// Run is the watcher; it returns when ctx ends, after ending every stream
// (a POST then gets 503).
func (e *Streams) Run(ctx context.Context) error {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			e.closeAll()
			return nil
		case now := <-t.C:
			e.poll(now)
			if now.Sub(e.layersAt) >= layersEvery {
				e.layersAt = now
				e.pollLayers()
			}
		}
	}
}

// poll reads each watched path's state and sends what changed.
func (e *Streams) poll(now time.Time) {
	e.mu.Lock()
	names := make([]string, 0, len(e.paths))
	for name := range e.paths {
		names = append(names, name)
	}
	e.mu.Unlock()
	// The hub's locks are taken with ours released (lock order: none
	// held across packages).
	for _, name := range names {
		st := e.cfg.State(name)
		live := isLive(st, now)
		e.mu.Lock()
		pe := e.paths[name]
		if pe == nil {
			e.mu.Unlock()
			continue
		}
		var evs []event
		if live != pe.live {
			pe.live = live
			if live {
				evs = append(evs, newEvent(evActive, struct{}{}))
			} else {
				evs = append(evs, newEvent(evInactive, struct{}{}))
			}
		}
		if st.Readers != pe.count && now.Sub(pe.countAt) >= viewerCountEvery {
			pe.count, pe.countAt = st.Readers, now
			evs = append(evs, viewerCountEvent(st.Readers))
		}
		e.mu.Unlock()
		for _, ev := range evs {
			e.broadcast(name, ev)
		}
	}
}

func (e *Streams) closeAll() {
	e.mu.Lock()
	e.closed = true
	list := make([]*eventStream, 0, len(e.byID))
	for _, es := range e.byID {
		list = append(list, es)
	}
	for _, es := range list {
		e.removeLocked(es)
	}
	e.mu.Unlock()
	for _, es := range list {
		es.end()
	}
}

// reconnectEvent tells a viewer of path where to go: the configured
// entry point's endpoint for the path, or (without one) no url, which
// sends the player back to the endpoint it first posted to (a load
// balancer's address, usually).
func (e *Streams) reconnectEvent(path string) event {
	if e.cfg.ReconnectURL == "" {
		return newEvent(evReconnect, struct{}{})
	}
	u := e.cfg.ReconnectURL + (&url.URL{Path: "/" + path + "/whep"}).EscapedPath()
	return newEvent(evReconnect, map[string]string{"url": u})
}

// Drain is the events' part of a shutdown without a black screen, once
// the WHEP server refuses new offers (whep.Server.Drain): every viewer of
// paths with an event stream is sent reconnect, and Drain waits up to
// wait, or until ctx ends, for those viewers to leave (a player opens its
// new session first, then deletes this one). Viewers without an event
// stream cannot be told, so the wait ends when none with one is left.
func (e *Streams) Drain(ctx context.Context, paths []string, wait time.Duration) {
	notified := 0
	for _, p := range paths {
		notified += e.broadcast(p, e.reconnectEvent(p))
	}
	e.log.Info("draining: viewers told to reconnect", "paths", len(paths), "event_streams", notified, "wait", wait.String())
	t := time.NewTimer(wait)
	defer t.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for e.sessions() > 0 {
		select {
		case <-t.C:
		case <-ctx.Done():
		case <-tick.C:
			continue
		}
		break
	}
}

// sessions counts the sessions that have an event stream.
func (e *Streams) sessions() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.bySession)
}
