// Package udpbatch sends many UDP datagrams with few system calls.
//
// On a small VPS the kernel side of one sendto(2) of a 1,200-byte packet
// costs several microseconds, more than encrypting the packet: fanning one
// video frame out to hundreds of viewers is dominated by system calls. Conn
// wraps the single UDP socket that carries every WebRTC session: writes are
// copied into a batch and leave in one sendmmsg(2) when the batch is full or,
// at the latest, after a short delay, so a frame's packets for all viewers
// go out together and nothing waits longer than the delay.
package udpbatch

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

// ErrClosed is returned by writes after Close.
var ErrClosed = errors.New("udpbatch: connection closed")

// Stats counts what went out, for metrics and benchmarks.
type Stats struct {
	Datagrams uint64 // datagrams handed to the kernel
	Syscalls  uint64 // sendmmsg/sendto calls that carried them
	Errors    uint64 // datagrams the kernel refused (dropped)
}

type counters struct {
	datagrams, syscalls, errors atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{Datagrams: c.datagrams.Load(), Syscalls: c.syscalls.Load(), Errors: c.errors.Load()}
}

var _ net.PacketConn = (*Conn)(nil)
