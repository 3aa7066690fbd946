package web

import (
	"log/slog"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/connlimit"
)

// refusalLogEvery bounds the log to one line per client (and one for the
// global cap) per interval, however fast connections are refused.
const refusalLogEvery = 10 * time.Second

// limitListener caps open connections, per client address and in total, so
// that one client holding thousands of idle sockets cannot use up the
// process's file descriptors and keep everyone else out. A connection over
// a cap is accepted and closed at once: the kernel has already completed
// the handshake, so closing is the only answer left, and it frees the
// descriptor immediately.
//
// The table holds one entry per client with an open connection, so it is
// bounded by the total cap.
type limitListener struct {
	net.Listener
	// exempt reports peers that only count against the total: a trusted
	// reverse proxy carries every viewer's requests on its connections.
	exempt func(netip.Addr) bool
	log    *slog.Logger
	table  *connlimit.Table
}

func newLimitListener(ln net.Listener, perClient, total int, exempt func(netip.Addr) bool, log *slog.Logger) *limitListener {
	return &limitListener{Listener: ln, exempt: exempt, log: log, table: connlimit.New(perClient, total, refusalLogEvery)}
}

// Accept returns the next connection within the caps, closing those over
// them; it returns only the inner listener's errors.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := peerAddr(c)
		key := ""
		if !l.exempt(addr) {
			key = auth.Key(addr)
		}
		if l.admit(key, addr) {
			return &countedConn{Conn: c, release: func() { l.release(key) }}, nil
		}
		connlimit.Refuse(c)
	}
}

// admit counts a new connection of key ("" for an exempt peer) or refuses
// it, logging a refusal summary at most once per interval.
func (l *limitListener) admit(key string, addr netip.Addr) bool {
	ok, r := l.table.Admit(key)
	switch {
	case ok || !r.Due:
	case r.OverTotal:
		l.log.Warn("HTTP connection limit reached; closing new connections", "open", r.Open, "refused", r.Refused,
			"remote", addr.String(), "fix", "raise http.maxConns if this is legitimate load")
	default:
		l.log.Warn("too many HTTP connections from one client; closing its new ones", "remote", key,
			"open", r.Open, "refused", r.Refused, "fix", "raise http.maxConnsPerClient if many viewers share this address, or list a reverse proxy in http.trustedProxies")
	}
	return ok
}

func (l *limitListener) release(key string) { l.table.Release(key) }

// openConns is the number of connections counted now.
func (l *limitListener) openConns() int { return l.table.Open() }

func peerAddr(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return ta.AddrPort().Addr().Unmap().WithZone("")
	}
	return auth.AddrOf(c.RemoteAddr().String())
}

// countedConn gives its slot back when it is closed, once, however many
// times Close is called.
type countedConn struct {
	net.Conn
	closed  atomic.Bool
	release func()
}

// Close releases the slot before closing, so that once the peer sees the
// close the slot is free for its next connection.
func (c *countedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.release()
	}
	return c.Conn.Close()
}

// CloseWrite keeps net/http's graceful close (half-close, then drain) of
// the wrapped TCP connection.
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
