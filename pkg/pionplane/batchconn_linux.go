//go:build linux

package pionplane

import (
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/srtwhep/srtwhep/internal/mmsg"
)

// BatchConn is a *net.UDPConn whose WriteTo batches datagrams. Reads and every
// other method go straight to the socket.
type BatchConn struct {
	*net.UDPConn
	raw   syscall.RawConn
	inet6 bool // the socket is AF_INET6 (IPv4 peers need mapped addresses)
	size  int
	delay time.Duration

	mu      sync.Mutex
	cur     *batch
	free    []*batch
	pending []*batch
	timer   *time.Timer
	closed  bool

	// flushMu serialises system calls so batches leave in the order they
	// were filled: one peer's packets must never overtake each other.
	flushMu sync.Mutex

	stats batchCounters

	// gso is cleared for good the first time the kernel refuses a
	// segmented send (no UDP GSO on this device or kernel).
	gso atomic.Bool
}

// batch is one sendmmsg worth of datagrams: copies of what WriteTo was
// given, and the messages that carry them. With UDP GSO, runs of
// equal-size datagrams to one peer (the packets of one video frame to one
// viewer) leave as one message.
type batch struct {
	data []byte // size × maxDatagram, one slot per datagram
	msgs *mmsg.SendBatch
}

func newBatch(size int) *batch {
	return &batch{data: make([]byte, size*maxDatagram), msgs: mmsg.NewSendBatch(size)}
}

// New wraps conn. size is the number of datagrams per system call and delay
// the longest a datagram may wait for its batch to fill (0 picks the
// defaults).
func NewBatchConn(conn *net.UDPConn, size int, delay time.Duration) (*BatchConn, error) {
	if size <= 0 {
		size = DefaultBatchSize
	}
	if delay <= 0 {
		delay = DefaultDelay
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	c := &BatchConn{UDPConn: conn, raw: raw, size: size, delay: delay}
	if c.inet6, err = mmsg.IsInet6(raw); err != nil {
		return nil, err
	}
	mmsg.SetDontFragment(raw, c.inet6)
	c.gso.Store(true)
	c.cur = newBatch(size)
	c.timer = time.AfterFunc(time.Hour, c.onTimer)
	c.timer.Stop()
	return c, nil
}

// WriteTo queues b for addr. It never blocks on the network: a full batch
// is sent by the writer that filled it.
func (c *BatchConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	ua, ok := addr.(*net.UDPAddr)
	if !ok || len(b) > maxDatagram {
		return c.UDPConn.WriteTo(b, addr)
	}
	var to mmsg.Sockaddr
	nlen := to.Set(ua.AddrPort(), c.inet6)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return 0, ErrBatchClosed
	}
	bt := c.cur
	i := bt.msgs.Len()
	slot := bt.data[i*maxDatagram : i*maxDatagram+len(b)]
	copy(slot, b)
	// Any datagram may join the previous one's message: the batch only
	// joins those to the same peer that GSO can carry together.
	bt.msgs.Add(slot, &to, nlen, c.gso.Load())
	if i == 0 {
		c.timer.Reset(c.delay)
	}
	full := i+1 == c.size
	if full {
		c.rotateLocked()
	}
	c.mu.Unlock()
	if full {
		c.drain()
	}
	return len(b), nil
}

// Flush sends whatever is queued now.
func (c *BatchConn) Flush() {
	c.mu.Lock()
	if c.cur.msgs.Len() > 0 {
		c.rotateLocked()
	}
	c.mu.Unlock()
	c.drain()
}

// Stats reports what went out so far.
func (c *BatchConn) Stats() BatchStats { return c.stats.snapshot() }

// Close sends what is queued, then closes the socket.
func (c *BatchConn) Close() error {
	c.Flush()
	c.mu.Lock()
	c.closed = true
	c.timer.Stop()
	c.mu.Unlock()
	return c.UDPConn.Close()
}

func (c *BatchConn) onTimer() { c.Flush() }

// rotateLocked moves the current batch to the send queue.
func (c *BatchConn) rotateLocked() {
	c.pending = append(c.pending, c.cur)
	if n := len(c.free); n > 0 {
		c.cur = c.free[n-1]
		c.free = c.free[:n-1]
	} else {
		c.cur = newBatch(c.size)
	}
	c.timer.Stop()
}

// drain sends queued batches in order until none is left.
func (c *BatchConn) drain() {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	for {
		c.mu.Lock()
		if len(c.pending) == 0 {
			c.mu.Unlock()
			return
		}
		bt := c.pending[0]
		c.pending = c.pending[1:]
		c.mu.Unlock()

		c.send(bt)

		c.mu.Lock()
		c.free = append(c.free, bt)
		c.mu.Unlock()
	}
}

// send hands a batch to the kernel and empties it. Datagrams the kernel
// refuses (an ICMP error queued for a departed peer, say) are counted and
// skipped so they cannot hold back the others; a closed socket counts
// what is left.
func (c *BatchConn) send(bt *batch) {
	res, _ := bt.msgs.Send(c.raw)
	if res.GSORefused {
		c.gso.Store(false)
	}
	c.stats.syscalls.Add(uint64(res.Syscalls))
	c.stats.datagrams.Add(uint64(res.Datagrams))
	c.stats.errors.Add(uint64(res.Dropped))
}
