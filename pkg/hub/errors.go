package hub

import "errors"

// Sentinel errors; the edges map them to protocol answers (SRT reject
// reasons, HTTP statuses) in exactly one place each.
var (
	// ErrPathBusy: a publisher already streams to the path.
	ErrPathBusy = errors.New("path is busy: another publisher is streaming to it")
	// ErrNoPublisher: nothing is being published on the path.
	ErrNoPublisher = errors.New("no stream is being published on this path")
	// ErrPathFull: the path's reader cap is reached.
	ErrPathFull = errors.New("path reader limit reached")
	// ErrServerFull: the server-wide reader limit is reached.
	ErrServerFull = errors.New("server reader limit reached")
	// ErrEnded: the publisher went away (or the reader was closed).
	ErrEnded = errors.New("stream ended")
	// ErrIdle: no frame came before RecvFrameIdle's idle channel fired.
	ErrIdle = errors.New("no frame within the idle time")
)
