package srt

/*
#cgo LDFLAGS: -lsrt
#include <srt/srt.h>

// srtwhep_sendstate reads a sender's backlog without clearing libsrt's
// interval counters (srtgo's Stats clears them): the time span of the
// packets it holds unacknowledged, and the smoothed RTT, in ms.
static int srtwhep_sendstate(SRTSOCKET u, int* unacked_ms, int* rtt_ms) {
	SRT_TRACEBSTATS st;
	if (srt_bstats(u, &st, 0) == SRT_ERROR) return -1;
	*unacked_ms = st.msSndBuf;
	*rtt_ms = (int)st.msRTT;
	return 0;
}

static int srtwhep_connected(SRTSOCKET u) {
	return srt_getsockstate(u) == SRTS_CONNECTED;
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/haivision/srtgo"

	"github.com/srtwhep/srtwhep/pkg/panics"
)

// srtoSndTimeo is SRTO_SNDTIMEO, which srtgo has no constant for: a
// reader's blocked Write wakes up this often to see whether it was closed.
const srtoSndTimeo = 13

// peerCheckEvery is how often an idle reader's socket is looked at: a
// reader whose path waits for a publisher writes nothing, so no failed
// write would tell that it left.
const peerCheckEvery = 500 * time.Millisecond

// readStartDelay holds a reader's first write back after the accept. The
// listener counts a connection as made when it sends its handshake
// response, but libsrt's caller loses data that arrives before it has
// processed that response (Haivision/srt#518, still open): a reader's
// first burst, the catch-up GOP that starts with the IDR, would then be
// gone, or recovered only if the retransmission beats the latency. The
// response and the data travel the same path, so only the caller's
// processing is raced, and a few tens of milliseconds cover it.
const readStartDelay = 50 * time.Millisecond

// ErrDisconnected ends a reader that left (or whose connection broke): it
// is the cause of ServeRead's context and what Write returns.
var ErrDisconnected = errors.New("reader disconnected")

// Write sends p as one SRT message: in live mode at most the payload size
// the two sides agreed (1316 bytes unless a caller asked otherwise, which
// is 7 TS packets, what players expect). It must be called from one
// goroutine at a time. It returns ErrDisconnected once the reader left or
// the conn was closed.
func (c *Conn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if c.closed.Load() {
			return 0, ErrDisconnected
		}
		if c.ctx.Err() != nil {
			c.closeWith("server shutdown")
			return 0, ErrDisconnected
		}
		n, err := c.sock.Write(p)
		if err == nil {
			c.bytes.Add(int64(n))
			return n, nil
		}
		switch {
		case errors.Is(err, srtgo.EAsyncSND) || isTimeout(err):
			// SRTO_SNDTIMEO expired with the send buffer full.
			continue
		case c.closed.Load() || errors.Is(err, srtgo.EConnLost) || errors.Is(err, srtgo.EInvSock) ||
			errors.Is(err, srtgo.ENoConn) || errors.Is(err, &srtgo.SrtSocketClosed{}):
			c.closeWith(ErrDisconnected.Error())
			return 0, ErrDisconnected
		}
		c.closeWith("write error: " + err.Error())
		return 0, fmt.Errorf("srt write to %s: %w", c.remote, err)
	}
}

// SendBacklog reports how far the conn's sender is behind its reader:
// the time span of the packets libsrt holds unacknowledged, and the
// round-trip time that span includes anyway. ok is false once the socket
// is gone. In live mode libsrt drops what waits longer than about a second
// instead of blocking Write, so a reader too slow for the stream shows up
// here, not as a blocked Write.
func (c *Conn) SendBacklog() (unacked, rtt time.Duration, ok bool) {
	if c.closed.Load() {
		return 0, 0, false
	}
	var un, r C.int
	if C.srtwhep_sendstate(C.SRTSOCKET(c.sock.GetSocket()), &un, &r) != 0 {
		return 0, 0, false
	}
	return time.Duration(un) * time.Millisecond, time.Duration(r) * time.Millisecond, true
}

// serveRead runs one reader: ServeRead with a context that also ends when
// the reader leaves while nothing is written to it.
func (s *Server) serveRead(ctx context.Context, c *Conn) {
	defer func() {
		c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	start := time.NewTimer(readStartDelay)
	defer start.Stop()
	select {
	case <-ctx.Done():
		return
	case <-start.C:
	}
	ctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(peerCheckEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if c.closed.Load() || C.srtwhep_connected(C.SRTSOCKET(c.sock.GetSocket())) == 0 {
				c.closeWith(ErrDisconnected.Error())
				cancel(ErrDisconnected)
				return
			}
		}
	})
	func() {
		defer panics.Catch(s.log, panics.SRTReader, func(err error) *slog.Logger { c.closeWith(err.Error()); return nil },
			"path", c.Path(), "remote", c.Remote())
		s.cfg.ServeRead(ctx, c)
	}()
	cancel(context.Canceled)
	wg.Wait()
}
