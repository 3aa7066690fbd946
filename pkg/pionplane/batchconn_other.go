//go:build !linux

package pionplane

import (
	"net"
	"time"
)

// BatchConn falls back to one system call per datagram where sendmmsg(2) does
// not exist.
type BatchConn struct {
	*net.UDPConn
	stats batchCounters
}

// New wraps conn; size and delay are ignored on this platform.
func NewBatchConn(conn *net.UDPConn, size int, delay time.Duration) (*BatchConn, error) {
	return &BatchConn{UDPConn: conn}, nil
}

// Flush does nothing: every write already went out.
func (c *BatchConn) Flush() {}

// Stats reports what went out so far.
func (c *BatchConn) Stats() BatchStats { return c.stats.snapshot() }
