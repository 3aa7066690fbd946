package srt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/haivision/srtgo"
)

// ErrReadTimeout ends a publisher that stayed connected but sent nothing
// for Config.ReadTimeout.
var ErrReadTimeout = errors.New("publisher sent no data; check that the encoder is running")

// readBufSize holds any SRT live message: srt_recvmsg2 fails on a buffer
// smaller than the message (1316 bytes for TS, up to 1456).
const readBufSize = 1500

// Stats is a snapshot of one publisher connection.
type Stats struct {
	RTTMs                float64 // smoothed round-trip time
	RecvMbps             float64 // current receive rate
	Bytes                int64   // payload bytes delivered to the reader
	PacketsReceived      int64   // data packets libsrt received, retransmissions included
	PacketsLost          int64   // detected as lost by the receiver
	PacketsRetransmitted int64   // retransmitted packets received
	PacketsDropped       int64   // arrived too late to play and were skipped
	// LatencyMs is the receive latency in effect (SRT's TSBPD delay): the
	// larger of the server's srt.latency and the publisher's latency=.
	LatencyMs int
}

// ConnInfo describes one connected publisher (see Server.Conns).
type ConnInfo struct {
	Path   string
	Remote string
	Since  time.Time
	Stats  Stats
}

// Conn is one accepted publisher. It is an io.Reader over the SRT socket:
// Read returns whole SRT messages (TS packets), never the RCVTIMEO ticks, and
// io.EOF once the peer leaves or Close is called.
type Conn struct {
	sock   *srtgo.SrtSocket // only read after construction: Read and Stats copy it
	closer func()           // closeSocket(sock)
	id     StreamID
	remote string
	since  time.Time
	dialed bool // made by Dial: this server is the caller
	// pubKey is what the publisher caps count this conn under (set by
	// adopt; "" for readers and dialed conns).
	pubKey string

	ctx         context.Context
	readTimeout time.Duration

	closeOnce sync.Once
	closed    atomic.Bool
	reason    atomic.Pointer[string] // why the conn ended, first cause wins

	buf      [readBufSize]byte
	pend     []byte
	lastData time.Time // only touched by the reading goroutine
	bytes    atomic.Int64

	statsMu   sync.Mutex
	stats     Stats // last good snapshot, kept after close
	retransCt int64 // srt_bstats clears interval counters, so sum them here
}

func newConn(ctx context.Context, sock *srtgo.SrtSocket, id StreamID, remote string, readTimeout time.Duration) *Conn {
	now := time.Now()
	return &Conn{
		sock:        sock,
		closer:      closeSocket(sock),
		id:          id,
		remote:      remote,
		since:       now,
		ctx:         ctx,
		readTimeout: readTimeout,
		lastData:    now,
	}
}

// Path is the stream path from the streamid.
func (c *Conn) Path() string { return c.id.Path }

// Remote is the publisher's address (ip:port).
func (c *Conn) Remote() string { return c.remote }

// StreamID is the parsed streamid the publisher connected with.
func (c *Conn) StreamID() StreamID { return c.id }

// Dialed reports a conn this server opened (Dial) to pull a stream, as
// opposed to one a publisher opened to it.
func (c *Conn) Dialed() bool { return c.dialed }

// Read implements io.Reader. It must be called from one goroutine at a time.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for len(c.pend) == 0 {
		if c.ctx.Err() != nil {
			// The conn's ctx is the server's: it ends only on shutdown.
			c.closeWith("server shutdown")
			return 0, io.EOF
		}
		if c.closed.Load() {
			return 0, io.EOF
		}
		// A caller buffer that holds any message is filled directly, which
		// saves a copy for bufio.Reader and io.Copy.
		dst := c.buf[:]
		if len(p) >= readBufSize {
			dst = p
		}
		n, err := c.sock.Read(dst)
		if err != nil {
			if isTimeout(err) {
				if c.readTimeout > 0 && time.Since(c.lastData) >= c.readTimeout {
					c.closeWith(fmt.Sprintf("no data for %s", c.readTimeout))
					return 0, fmt.Errorf("no data for %s: %w", c.readTimeout, ErrReadTimeout)
				}
				continue
			}
			if c.closed.Load() || errors.Is(err, srtgo.EConnLost) || errors.Is(err, srtgo.EInvSock) ||
				errors.Is(err, srtgo.ENoConn) || errors.Is(err, &srtgo.SrtSocketClosed{}) {
				c.closeWith("publisher disconnected")
				return 0, io.EOF
			}
			c.closeWith("read error: " + err.Error())
			return 0, fmt.Errorf("srt read from %s: %w", c.remote, err)
		}
		if n == 0 {
			continue
		}
		c.lastData = time.Now()
		c.bytes.Add(int64(n))
		if len(p) >= readBufSize {
			return n, nil
		}
		c.pend = c.buf[:n]
	}
	n := copy(p, c.pend)
	c.pend = c.pend[n:]
	return n, nil
}

// closeSocket returns a function that closes sock. srtgo's Close writes
// the struct it is called on while value-receiver methods copy it, so a
// concurrent Read would race: closing a copy avoids that. The finalizer is
// dropped because srtgo's would srt_close the id again later, when libsrt
// may have handed it to a new connection.
func closeSocket(sock *srtgo.SrtSocket) func() {
	closer := *sock
	return func() {
		closer.Close()
		runtime.SetFinalizer(sock, nil)
	}
}

// isTimeout reports an SRTO_RCVTIMEO expiry; srtgo wraps some errnos, so
// the Timeout method is checked rather than the bare value.
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// Close closes the socket; a blocked Read returns io.EOF at once (blocking
// mode wakes up on close). Safe to call more than once and concurrently.
func (c *Conn) Close() error {
	c.closeWith("closed by server")
	return nil
}

// CloseWith closes the socket like Close, recording reason for the
// "publisher closed" log line unless an earlier cause was recorded.
func (c *Conn) CloseWith(reason string) { c.closeWith(reason) }

func (c *Conn) closeWith(reason string) {
	c.reason.CompareAndSwap(nil, &reason)
	c.closeOnce.Do(func() {
		c.snapshotStats() // the socket's counters are gone after close
		c.closed.Store(true)
		c.closer()
	})
}

// endReason is why the conn ended, for the "publisher closed" log line.
func (c *Conn) endReason() string {
	if r := c.reason.Load(); r != nil {
		return *r
	}
	return "closed by server"
}

// EndReason is why the conn ended ("publisher disconnected", "kicked",
// "no data for 2s", …), or "" while nothing has closed it.
func (c *Conn) EndReason() string {
	if r := c.reason.Load(); r != nil {
		return *r
	}
	return ""
}

// SocketID is libsrt's id of the socket, unique among the process's open
// SRT sockets: it tells two connections of one path apart.
func (c *Conn) SocketID() int { return int(c.sock.GetSocket()) }

// Stats returns live socket statistics, or the last ones once closed.
func (c *Conn) Stats() Stats {
	if c.closed.Load() {
		c.statsMu.Lock()
		defer c.statsMu.Unlock()
		st := c.stats
		st.Bytes = c.bytes.Load()
		return st
	}
	return c.snapshotStats()
}

func (c *Conn) snapshotStats() Stats {
	c.statsMu.Lock()
	defer c.statsMu.Unlock()
	if !c.closed.Load() {
		if s, err := c.sock.Stats(); err == nil {
			c.retransCt += int64(s.PktRcvRetrans)
			c.stats = Stats{
				RTTMs:                s.MsRTT,
				RecvMbps:             s.MbpsRecvRate,
				PacketsReceived:      s.PktRecvTotal,
				PacketsLost:          int64(s.PktRcvLossTotal),
				PacketsRetransmitted: c.retransCt,
				PacketsDropped:       int64(s.PktRcvDropTotal),
				LatencyMs:            s.MsRcvTsbPdDelay,
			}
		}
	}
	st := c.stats
	st.Bytes = c.bytes.Load()
	return st
}
