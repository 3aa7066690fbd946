package whep

import (
	"context"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/pkg/hub"
)

// How path state becomes events. The hub is polled rather than asked for
// callbacks: a publisher whose encoder died writes nothing and calls
// nothing, so "inactive" needs a clock anyway, and one ticker over the
// paths that have event streams costs no goroutine per path and keeps the
// publisher's hot path free of subscriber lists.
var (
	// sseTick is how often the watcher reads the state of the paths that
	// have event streams.
	sseTick = 100 * time.Millisecond
	// sseStaleAfter: a publisher whose last frame is older than this is
	// reported inactive. A little over a second, so a 1 s GOP's pause or a
	// network hiccup does not flap it, and well under the 2 s after which
	// a viewer wants to be told.
	sseStaleAfter = 1500 * time.Millisecond
	// sseViewerCountEvery limits viewercount to one a second per path.
	sseViewerCountEvery = time.Second
)

// Defaults of the event stream limits.
const (
	// DefaultMaxEventStreams bounds the open event streams of the server.
	DefaultMaxEventStreams = 1024
	// maxEventStreamsPerSession: a player needs one; two lets a page
	// reopen its stream before the old one's DELETE has landed.
	maxEventStreamsPerSession = 2
)

// pathEvents is what the watcher last reported on one path.
type pathEvents struct {
	streams   int
	live      bool
	count     int // viewercount last sent
	countAt   time.Time
	countSeen bool
}

// eventStreams is the server's registry of event streams, bounded in
// total and per session, and the watcher that feeds them.
type eventStreams struct {
	state    func(path string) hub.PathState
	maxTotal int

	mu        sync.Mutex
	closed    bool
	byID      map[string]*eventStream
	bySession map[string][]*eventStream
	paths     map[string]*pathEvents

	// sent counts events written to readers, by sseEventTypes index.
	sent [len(sseEventTypes)]atomic.Uint64
}

func newEventStreams(state func(string) hub.PathState, maxTotal int) *eventStreams {
	return &eventStreams{state: state, maxTotal: maxTotal, byID: make(map[string]*eventStream),
		bySession: make(map[string][]*eventStream), paths: make(map[string]*pathEvents)}
}

// Errors of open, mapped to answers in sse.go.
type sseLimit int

const (
	sseOpened sseLimit = iota
	sseSessionFull
	sseServerFull
	sseClosed
)

// open registers a stream for session on path and queues what is true
// right now: active when the publisher is live (never an initial
// inactive, as the extension asks), and the viewer count.
func (e *eventStreams) open(session, path string, want uint8) (*eventStream, sseLimit) {
	st := e.state(path)
	now := time.Now()
	e.mu.Lock()
	switch {
	case e.closed:
		e.mu.Unlock()
		return nil, sseClosed
	case len(e.bySession[session]) >= maxEventStreamsPerSession:
		e.mu.Unlock()
		return nil, sseSessionFull
	case len(e.byID) >= e.maxTotal:
		e.mu.Unlock()
		return nil, sseServerFull
	}
	es := newEventStream(newSessionID(), session, path, want)
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
		es.push(newSSEEvent(evActive, struct{}{}))
	}
	es.push(viewerCountEvent(count))
	return es, sseOpened
}

func viewerCountEvent(n int) sseEvent {
	return newSSEEvent(evViewerCount, map[string]int{"viewercount": n})
}

// isLive: a publisher is there, its stream has reached the hub with an
// IDR (a new publisher after a handover is live only from its first IDR,
// when viewers see pictures again), and its frames still come.
func isLive(st hub.PathState, now time.Time) bool {
	return st.Publisher && st.Playable && now.Sub(st.LastFrame) < sseStaleAfter
}

func (e *eventStreams) lookup(id string) *eventStream {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.byID[id]
}

// remove ends the stream and forgets it.
func (e *eventStreams) remove(es *eventStream) {
	e.mu.Lock()
	e.removeLocked(es)
	e.mu.Unlock()
	es.end()
}

func (e *eventStreams) removeLocked(es *eventStream) {
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

// sessionEnded ends the session's streams: the extension ties them to
// their WHEP resource.
func (e *eventStreams) sessionEnded(session string) {
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
func (e *eventStreams) len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.byID)
}

// broadcast pushes ev to every stream (of path, when path is not "").
func (e *eventStreams) broadcast(path string, ev sseEvent) int {
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

// run is the watcher; it returns when ctx ends, after ending every stream.
func (e *eventStreams) run(ctx context.Context) {
	t := time.NewTicker(sseTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			e.closeAll()
			return
		case now := <-t.C:
			e.poll(now)
		}
	}
}

// poll reads each watched path's state and sends what changed.
func (e *eventStreams) poll(now time.Time) {
	e.mu.Lock()
	names := make([]string, 0, len(e.paths))
	for name := range e.paths {
		names = append(names, name)
	}
	e.mu.Unlock()
	// The hub's locks are taken with ours released (lock order: none
	// held across packages).
	for _, name := range names {
		st := e.state(name)
		live := isLive(st, now)
		e.mu.Lock()
		pe := e.paths[name]
		if pe == nil {
			e.mu.Unlock()
			continue
		}
		var evs []sseEvent
		if live != pe.live {
			pe.live = live
			if live {
				evs = append(evs, newSSEEvent(evActive, struct{}{}))
			} else {
				evs = append(evs, newSSEEvent(evInactive, struct{}{}))
			}
		}
		if st.Readers != pe.count && now.Sub(pe.countAt) >= sseViewerCountEvery {
			pe.count, pe.countAt = st.Readers, now
			evs = append(evs, viewerCountEvent(st.Readers))
		}
		e.mu.Unlock()
		for _, ev := range evs {
			e.broadcast(name, ev)
		}
	}
}

func (e *eventStreams) closeAll() {
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
func (s *Server) reconnectEvent(path string) sseEvent {
	if s.cfg.ReconnectURL == "" {
		return newSSEEvent(evReconnect, struct{}{})
	}
	u := s.cfg.ReconnectURL + (&url.URL{Path: "/" + path + "/whep"}).EscapedPath()
	return newSSEEvent(evReconnect, map[string]string{"url": u})
}

// Drain prepares a shutdown without a black screen: new offers are
// refused (503, so a load balancer retries elsewhere), every viewer with
// an event stream is sent reconnect, and Drain waits up to wait, or until
// ctx ends, for those viewers to leave (a player opens its new session
// first, then deletes this one). It returns how many sessions there were
// and how many are left; the caller then stops the server, which ends
// those.
func (s *Server) Drain(ctx context.Context, wait time.Duration) (sessions, left int) {
	s.draining.Store(true)
	s.mu.Lock()
	paths := make(map[string]bool)
	for _, sess := range s.sessions {
		paths[sess.path] = true
	}
	sessions = len(s.sessions)
	s.mu.Unlock()
	notified := 0
	if s.sse != nil {
		for p := range paths {
			notified += s.sse.broadcast(p, s.reconnectEvent(p))
		}
	}
	s.log.Info("draining: viewers told to reconnect", "sessions", sessions, "event_streams", notified, "wait", wait.String())
	t := time.NewTimer(wait)
	defer t.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	// Only viewers with an event stream can move; the wait ends when none
	// is left, since the others stay until the sessions are ended.
	for s.sse != nil && s.sse.sessions() > 0 {
		select {
		case <-t.C:
		case <-ctx.Done():
		case <-tick.C:
			continue
		}
		break
	}
	s.mu.Lock()
	left = len(s.sessions)
	s.mu.Unlock()
	return sessions, left
}

// sessions counts the sessions that have an event stream.
func (e *eventStreams) sessions() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.bySession)
}

// State reads the hub's path state for the event streams.
func (hs hubSource) State(path string) hub.PathState { return hs.h.State(path) }
