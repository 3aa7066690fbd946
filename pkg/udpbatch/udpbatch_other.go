//go:build !linux

package udpbatch

import (
	"net"
	"time"
)

// Conn falls back to one system call per datagram where sendmmsg(2) does
// not exist.
type Conn struct {
	*net.UDPConn
	stats counters
}

// New wraps conn; size and delay are ignored on this platform.
func New(conn *net.UDPConn, size int, delay time.Duration) (*Conn, error) {
	return &Conn{UDPConn: conn}, nil
}

// Flush does nothing: every write already went out.
func (c *Conn) Flush() {}

// Stats reports what went out so far.
func (c *Conn) Stats() Stats { return c.stats.snapshot() }
