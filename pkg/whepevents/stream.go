package whepevents

import (
	"encoding/json"
	"sync"
)

// Rel is the Link relation of the extension.
const Rel = "urn:ietf:params:whep:ext:core:server-sent-events"

// The event types this server sends, as named in the Link's events
// attribute and in the POST body.
const (
	evActive      = "active"
	evInactive    = "inactive"
	evReconnect   = "reconnect"
	evViewerCount = "viewercount"
	// evLayers goes with the layer selection extension (Config.Layers).
	evLayers = "layers"
)

// eventTypes is every type, in the Link's order; the bit of a type in
// a stream's want mask is its index here.
var eventTypes = [...]string{evActive, evInactive, evReconnect, evViewerCount, evLayers}

func eventBit(name string) uint8 {
	for i, t := range eventTypes {
		if t == name {
			return 1 << i
		}
	}
	return 0
}

const allEvents uint8 = 1<<len(eventTypes) - 1

// queueMax bounds one stream's undelivered events. Only viewercount and
// layers can come in numbers and a queued one is replaced by the next, so a stream whose reader stalls holds at most this many state
// changes before the oldest go; the hub never waits for it.
const queueMax = 16

// event is one event, its data already the JSON line it is sent as.
type event struct {
	typ  string
	data []byte
}

func newEvent(typ string, v any) event {
	b, _ := json.Marshal(v) // maps and structs of strings and ints
	return event{typ: typ, data: b}
}

// eventStream is one event stream of one WHEP session. The watcher (and
// a drain) push into it, at most one GET at a time reads it.
type eventStream struct {
	id, session, path string
	want              uint8

	mu      sync.Mutex
	queue   []event
	dropped uint64
	// reader is closed to tell the GET reading the stream that a newer GET
	// took over (an EventSource reconnecting before the server noticed
	// its old connection died); nil while nobody reads.
	reader chan struct{}
	ended  bool
	// layersMu serialises sendLayers (the watcher's and a pin's), so the
	// last ladder read is the last queued; it guards layers, the data of
	// that event.
	layersMu sync.Mutex
	layers   []byte

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
// queued viewercount or layers is replaced by the newer one (old counts
// and ladders are worthless), and a full queue loses its oldest active or
// inactive.
func (es *eventStream) push(ev event) {
	if es.want&eventBit(ev.typ) == 0 {
		return
	}
	es.mu.Lock()
	if es.ended {
		es.mu.Unlock()
		return
	}
	if ev.typ == evViewerCount || ev.typ == evLayers {
		for i := range es.queue {
			if es.queue[i].typ == ev.typ {
				es.queue = append(es.queue[:i], es.queue[i+1:]...)
				break
			}
		}
	}
	if len(es.queue) >= queueMax {
		// The oldest state change goes: a newer one behind it says where
		// the path is now. The one viewercount and the one layers (the
		// latest) and a reconnect stay.
		drop := 0
		for i := range es.queue {
			if t := es.queue[i].typ; t != evViewerCount && t != evLayers && t != evReconnect {
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
func (es *eventStream) take(buf []event) []event {
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
