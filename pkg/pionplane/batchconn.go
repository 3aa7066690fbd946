// batchconn.go: pion's ICE UDP mux writes through a BatchConn.
//
// On a small VPS the kernel side of one sendto(2) of a 1,200-byte packet
// costs several microseconds, more than encrypting the packet: fanning one
// video frame out to hundreds of viewers is dominated by system calls.
// BatchConn wraps the single UDP socket that carries every pion session:
// writes are copied into a batch and leave in one sendmmsg(2) when the
// batch is full or, at the latest, after a short delay, so a frame's
// packets for all viewers go out together and nothing waits longer than
// the delay. (srtwhep's own plane batches by itself, in its writer pool.)

package pionplane

import (
	"errors"
	"net"
	"sync/atomic"
	"time"
)

// Defaults suit a 30 fps fan-out: 64 datagrams per system call amortise
// its fixed cost, and 1 ms of extra delay is invisible next to a
// browser's jitter buffer.
const (
	DefaultBatchSize = 64
	DefaultDelay     = time.Millisecond
	// maxDatagram bounds what a batch slot holds; WebRTC packets stay
	// below the path MTU, so anything larger goes out on its own.
	maxDatagram = 1500
)

// ErrBatchClosed is returned by writes after Close.
var ErrBatchClosed = errors.New("pionplane: connection closed")

// BatchStats counts what went out, for metrics and benchmarks.
type BatchStats struct {
	Datagrams uint64 // datagrams handed to the kernel
	Syscalls  uint64 // sendmmsg/sendto calls that carried them
	Errors    uint64 // datagrams the kernel refused (dropped)
}

type batchCounters struct {
	datagrams, syscalls, errors atomic.Uint64
}

func (c *batchCounters) snapshot() BatchStats {
	return BatchStats{Datagrams: c.datagrams.Load(), Syscalls: c.syscalls.Load(), Errors: c.errors.Load()}
}

var _ net.PacketConn = (*BatchConn)(nil)
