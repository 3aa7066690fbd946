// Package events describes what happens to publishers, readers and edge
// sources, for a control plane that wants to know where streams are
// without polling (hooks.url). Producers call a Func; it never blocks.
package events

import "time"

// Kind names an event in the JSON a hook receives.
type Kind string

const (
	PublisherConnected    Kind = "publisher.connected"
	PublisherDisconnected Kind = "publisher.disconnected"
	ReaderOpened          Kind = "reader.opened"
	ReaderClosed          Kind = "reader.closed"
	SourceUp              Kind = "source.up"
	SourceDown            Kind = "source.down"
)

// Event is one thing that happened on a path.
type Event struct {
	Kind Kind      `json:"event"`
	Time time.Time `json:"time"`
	Path string    `json:"path"`
	// Protocol is "srt" or "webrtc" for publishers and readers, "srt" for
	// an edge source.
	Protocol string `json:"protocol,omitempty"`
	// ID is the publisher's or reader's session id, or the source URL
	// (without credentials) for an edge source.
	ID     string `json:"id,omitempty"`
	Remote string `json:"remote,omitempty"`
	// Reason says why a session or source ended (empty when it began).
	Reason string `json:"reason,omitempty"`
}

// Func receives events. Implementations must return at once: producers
// call it on their media goroutines.
type Func func(Event)

// Emit calls f when it is set, so a producer with no hook configured
// needs no check of its own.
func (f Func) Emit(e Event) {
	if f == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	f(e)
}
