package plane

import (
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/connlimit"
)

// ICE-TCP connection caps.
const (
	// DefaultMaxTCPPerClient bounds one client's ICE-TCP connections: a
	// browser opens one per candidate pair it checks over TCP, a few.
	DefaultMaxTCPPerClient = 8
	// MaxTCPConns bounds the ICE-TCP connections open at once. Each costs
	// a goroutine and a few kilobytes.
	MaxTCPConns = 4096
)

// tcpRefusalLogEvery spaces the refusal lines: one per client (and one
// for the total cap) per interval, however fast connections come.
const tcpRefusalLogEvery = time.Second

// TCPLimit caps the plane's ICE-TCP connections per client (auth.Key: an
// IPv4 address, an IPv6 /64) and in total, so that one client's sockets
// cannot take the ones every other viewer needs.
type TCPLimit struct {
	perClient, total int
	log              *slog.Logger
	table            *connlimit.Table

	refusedPerClient, refusedTotal atomic.Uint64
}

// NewTCPLimit caps connections at perClient per client (0 means
// DefaultMaxTCPPerClient) and total in all (0 means MaxTCPConns),
// logging refusals to log.
func NewTCPLimit(perClient, total int, log *slog.Logger) *TCPLimit {
	if perClient <= 0 {
		perClient = DefaultMaxTCPPerClient
	}
	if total <= 0 {
		total = MaxTCPConns
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &TCPLimit{perClient: perClient, total: total, log: log,
		table: connlimit.New(perClient, total, tcpRefusalLogEvery)}
}

// Admit counts a new connection from addr, or refuses it when a cap is
// reached. release gives the slot back; it must be called once, when
// the connection closes.
func (l *TCPLimit) Admit(addr netip.Addr) (release func(), ok bool) {
	key := auth.Key(addr)
	ok, r := l.table.Admit(key)
	switch {
	case ok:
		var once sync.Once
		return func() { once.Do(func() { l.table.Release(key) }) }, true
	case r.OverTotal:
		l.refusedTotal.Add(1)
		if r.Due {
			l.log.Warn("ICE-TCP connection refused: the server holds the most it takes", "remote", addr.String(),
				"limit", l.total, "refused", r.Refused)
		}
	default:
		l.refusedPerClient.Add(1)
		if r.Due {
			l.log.Warn("ICE-TCP connection refused: too many from this client; raise webrtc.maxTCPPerClient if many viewers share its address",
				"remote", key, "limit", l.perClient, "refused", r.Refused)
		}
	}
	return nil, false
}

// Refused is how many connections were refused so far over the
// per-client cap and over the total.
func (l *TCPLimit) Refused() (perClient, total uint64) {
	return l.refusedPerClient.Load(), l.refusedTotal.Load()
}

// Open is the number of connections counted now.
func (l *TCPLimit) Open() int { return l.table.Open() }
