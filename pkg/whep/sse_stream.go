package whep

import (
	"encoding/json"
	"sync"
)

// The server-sent events extension of WHEP ("WHEP Core Extensions",
// webrtc-http-egress-events in the working group's repository): a viewer
// learns when its path's publisher comes and goes, how many watch, and
// when to move to another server, instead of guessing from stalled frames.
// The Link of every 201 names the session's SSE entry point; a POST there
// makes an event stream, a GET reads it as text/event-stream, a DELETE
// ends it, and it ends with its session. This file is one stream and its
// queue; sse.go the HTTP side; sse_watch.go turns the hub's path state
// into events.

// sseRel is the Link relation of the extension.
const sseRel = "urn:ietf:params:whep:ext:core:server-sent-events"

// The event types this server sends, as named in the Link's events
// attribute and in the POST body.
const (
	evActive      = "active"
	evInactive    = "inactive"
	evReconnect   = "reconnect"
	evViewerCount = "viewercount"
)

// sseEventTypes is every type, in the Link's order; the bit of a type in
// a stream's want mask is its index here.
var sseEventTypes = [...]string{evActive, evInactive, evReconnect, evViewerCount}

func sseEventBit(name string) uint8 {
	for i, t := range sseEventTypes {
		if t == name {
			return 1 << i
		}
	}
	return 0
}

const sseAllEvents uint8 = 1<<len(sseEventTypes) - 1

// sseQueueMax bounds one stream's undelivered events. Only viewercount
// can come in numbers (one a second) and a queued one is replaced by the
// next, so a stream whose reader stalls holds at most this many state
// changes before the oldest go; the hub never waits for it.
const sseQueueMax = 16

// sseEvent is one event, its data already the JSON line it is sent as.
type sseEvent struct {
	typ  string
	data []byte
}

func newSSEEvent(typ string, v any) sseEvent {
	b, _ := json.Marshal(v) // maps and structs of strings and ints
	return sseEvent{typ: typ, data: b}
}

// eventStream is one event stream of one WHEP session. The watcher (and
// a drain) push into it, at most one GET at a time reads it.
type eventStream struct {
	id, session, path string
	want              uint8

	mu      sync.Mutex
	queue   []sseEvent
	dropped uint64
	// reader is closed to tell the GET reading the stream that a newer GET
	// took over (an EventSource reconnecting before the server noticed
	// its old connection died); nil while nobody reads.
	reader chan struct{}
	ended  bool

	// wake has room for one signal: "the queue changed".
	wake chan struct{}
	// done is closed when the stream ends (DELETE, its session's end, the
	// server's shutdown).
	done chan struct{}
}

func newEventStream(id, session, path string, want uint8) *eventStream {
	return &eventStream{id: id, session: session, path: path, want: want,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// push queues ev when the stream asked for its type. It never blocks: a
// queued viewercount is replaced by the newer count (old counts are
// worthless), and a full queue loses its oldest active or inactive.
func (es *eventStream) push(ev sseEvent) {
	if es.want&sseEventBit(ev.typ) == 0 {
		return
	}
	es.mu.Lock()
	if es.ended {
		es.mu.Unlock()
		return
	}
	if ev.typ == evViewerCount {
		for i := range es.queue {
			if es.queue[i].typ == evViewerCount {
				es.queue = append(es.queue[:i], es.queue[i+1:]...)
				break
			}
		}
	}
	if len(es.queue) >= sseQueueMax {
		// The oldest state change goes: a newer one behind it says where
		// the path is now. The one viewercount (the latest) and a
		// reconnect stay.
		drop := 0
		for i := range es.queue {
			if t := es.queue[i].typ; t != evViewerCount && t != evReconnect {
				drop = i
				break
			}
		}
		es.queue = append(es.queue[:drop], es.queue[drop+1:]...)
		es.dropped++
	}
	es.queue = append(es.queue, ev)
	es.mu.Unlock()
	select {
	case es.wake <- struct{}{}:
	default:
	}
}

// take empties the queue into buf.
func (es *eventStream) take(buf []sseEvent) []sseEvent {
	es.mu.Lock()
	defer es.mu.Unlock()
	buf = append(buf[:0], es.queue...)
	clear(es.queue)
	es.queue = es.queue[:0]
	return buf
}

// attachReader makes the caller the stream's reader, telling an earlier
// one to stop; ok is false once the stream has ended.
func (es *eventStream) attachReader() (kicked <-chan struct{}, ok bool) {
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.ended {
		return nil, false
	}
	if es.reader != nil {
		close(es.reader)
	}
	es.reader = make(chan struct{})
	return es.reader, true
}

// end drops what is queued and wakes the reader, which returns.
func (es *eventStream) end() {
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.ended {
		return
	}
	es.ended = true
	es.queue = nil
	close(es.done)
}
