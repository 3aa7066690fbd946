package srt

import (
	"context"
	"log/slog"
	"time"
)

// Config configures a Server. Listen and Serve are required.
type Config struct {
	Listen  string        // UDP address, e.g. ":8890" or "127.0.0.1:0"
	Latency time.Duration // SRTO_LATENCY; 0 keeps libsrt's default (120 ms)

	// Passphrase returns the passphrase for a path ("" = no encryption). It
	// is set on the connecting socket during the handshake, so a caller
	// with a wrong or missing passphrase fails the libsrt handshake.
	Passphrase func(path string) string
	PBKeyLen   int // 0 (libsrt default), 16, 24 or 32

	// ReadTimeout closes a publisher that sends nothing for this long
	// (0 = only libsrt's own 5 s peer-idle timeout).
	ReadTimeout time.Duration

	// MaxPublishers and MaxPublishersPerIP cap the publisher connections
	// in total and per client address (per /64 for IPv6); a caller past
	// either is rejected in the listen callback with overload (1402).
	// 0 takes DefaultMaxPublishers and DefaultMaxPublishersPerIP.
	MaxPublishers, MaxPublishersPerIP int

	// SocketBuffer is the kernel receive buffer of the UDP socket every
	// publisher's packets arrive on, in bytes (SRTO_UDP_RCVBUF): 0 takes
	// DefaultSocketBuffer, a negative value keeps libsrt's request. The
	// kernel caps it at net.core.rmem_max; Run warns with the sysctl.
	SocketBuffer int

	// Admit decides during the handshake; a non-nil error rejects it (see
	// rejectReason for how errors become reject reasons). It runs on
	// libsrt's receive thread, which serves every connection on the port:
	// it must be O(1) and local, never a network call or a contended lock.
	// Anything slower belongs in Serve, on the publisher's own goroutine.
	Admit func(Request) error

	// Serve runs on one goroutine per accepted publisher, owned by Run, and
	// returns when the stream ends. The conn is closed after it returns.
	Serve func(ctx context.Context, c *Conn) error
	// PublisherLog, when set, gives the logger of one publisher's
	// "publisher connected" and "publisher closed" lines, derived from
	// base: ingest holds back the lines of an encoder reconnecting in a
	// loop that is refused each time, and summarises them.
	PublisherLog func(base *slog.Logger, path, remote string) *slog.Logger

	// AdmitRead is Admit for callers that read (streamid read:PATH or
	// m=request), under the same rules: O(1), local, on libsrt's thread.
	AdmitRead func(Request) error
	// ServeRead sends a path to one accepted reader with Conn.Write, on
	// one goroutine per reader owned by Run, and returns when it is done;
	// it logs the reader's lifecycle itself. ctx also ends when the reader
	// disconnects (its cause is then ErrDisconnected). The conn is closed
	// after it returns. Nil refuses readers with a pointer to WHEP.
	ServeRead func(ctx context.Context, c *Conn)

	Logger *slog.Logger
}

// Request is what Admit sees of a connecting caller.
type Request struct {
	StreamID StreamID
	Remote   string
}
