// Package panics catches a panic in one connection's goroutine: the
// connection ends, its stack is logged in one line and counted, and the
// server goes on. Without it, one parser bug reached by one publisher's
// bytes or one viewer's datagrams ended every stream of the process.
//
// It is deferred at the top of each per-connection goroutine (and around
// each step a shared goroutine runs for one connection), never around the
// server's own loops: a bug there must not leave a server that looks up
// but serves nothing.
package panics

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
)

// Where a panic was caught: the label values of srtwhep_panics_total.
const (
	SRTPublisher    = "srt_publisher"    // one publisher's ingest (srt.Server)
	SRTReader       = "srt_reader"       // one SRT reader (srt.Server)
	EdgePull        = "edge_pull"        // one edge pull's ingest
	ViewerHandshake = "viewer_handshake" // one viewer's DTLS handshake
	ViewerSender    = "viewer_sender"    // one viewer's sender step
	ViewerInput     = "viewer_input"     // one datagram or ICE-TCP frame from a viewer
)

// Places lists every Where value, for metrics that export zeros.
var Places = []string{SRTPublisher, SRTReader, EdgePull, ViewerHandshake, ViewerSender, ViewerInput}

// Error is what the connection ends with.
type Error struct {
	Where string
	Value any
}

func (e *Error) Error() string {
	return fmt.Sprintf("internal error (panic in %s: %v); this connection was closed and the server goes on; please report it with the log line", e.Where, e.Value)
}

var (
	mu     sync.Mutex
	counts = map[string]uint64{}
)

// Counts is the panics caught so far by Where, for the life of the
// process.
func Counts() map[string]uint64 {
	mu.Lock()
	defer mu.Unlock()
	out := make(map[string]uint64, len(counts))
	for k, n := range counts {
		out[k] = n
	}
	return out
}

// Catch recovers a panic of the goroutine it is deferred in (it must be
// the deferred call itself: defer panics.Catch(...)). It counts it, calls
// end with the *Error, which ends the one connection, and logs one error
// line with where, the value, the stack and attrs (path, session,
// remote). end may return the connection's own logger, which carries
// those attributes, to log with instead of log: a site that runs per
// datagram learns the connection only once something went wrong, and
// must not build attributes for every datagram. Without a panic Catch
// does nothing.
func Catch(log *slog.Logger, where string, end func(error) *slog.Logger, attrs ...any) {
	v := recover()
	if v == nil {
		return
	}
	mu.Lock()
	counts[where]++
	mu.Unlock()
	err := &Error{Where: where, Value: v}
	if end != nil {
		if l := end(err); l != nil {
			log = l
		}
	}
	if log != nil {
		// One line: a multi-line stack would be many events to a log
		// shipper.
		stack := strings.ReplaceAll(strings.TrimSpace(string(debug.Stack())), "\n", " | ")
		log.Error("panic recovered: the connection is closed, the server goes on",
			append(attrs, "where", where, "panic", fmt.Sprint(v), "stack", stack)...)
	}
}
