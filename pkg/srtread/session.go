package srtread

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/pkg/api"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/srt"
)

// A reader is too slow when libsrt holds more than maxUnacked of its
// stream unacknowledged (or twice the round trip, on a long link): live
// mode never blocks a write, it drops what waits longer than about a
// second, so without this check a reader on a link too narrow for the
// stream would lose packets at random and never its queue. Waiting instead
// lets its queue fill, which costs it whole GOP tails (the hub's drop to
// the next IDR, "reader is too slow") and never a smeared picture.
const (
	maxUnacked = 500 * time.Millisecond
	roomPoll   = 20 * time.Millisecond
)

// keepAliveAfter of silence the reader gets a null packet. Between two
// publishers (a crashed encoder restarting within the publisher grace) the
// path sends nothing, and a reader that times out on silence (an edge's
// pull, after srt.readTimeout, 2 s by default) would hang up on a stream
// that is about to go on; the null packets tell it this server is alive.
// A reader that hears nothing at all can still tell that the server died.
const keepAliveAfter = 500 * time.Millisecond

// errKicked ends a reader closed through the API.
var errKicked = errors.New("kicked")

// session is one SRT reader.
type session struct {
	id, path, remote string
	since            time.Time
	conn             *srt.Conn
	reader           *hub.Reader
	cancel           context.CancelCauseFunc

	bytes    atomic.Uint64
	messages atomic.Uint64
	changes  atomic.Int64
}

// run sends the reader's frames until it ends, and returns why.
func (sess *session) run(ctx context.Context, log *slog.Logger) string {
	out := newPacketizer(func(msg []byte) error {
		if _, err := sess.conn.Write(msg); err != nil {
			return err
		}
		sess.bytes.Add(uint64(len(msg)))
		sess.messages.Add(1)
		sess.reader.CountSent(1, len(msg))
		return nil
	})
	m := newMuxer(out, log, sess.reader.SourceAudio)
	idle := time.NewTimer(keepAliveAfter)
	defer idle.Stop()
	for {
		// Checked first because a reader prefers queued frames over a
		// done context, and an ended session must not drain its queue.
		if ctx.Err() != nil {
			return endReason(ctx, nil)
		}
		idle.Reset(keepAliveAfter)
		f, err := sess.reader.RecvFrameIdle(ctx, idle.C)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return endReason(ctx, nil)
		case errors.Is(err, hub.ErrIdle):
			if err := out.KeepAlive(); err != nil {
				return endReason(ctx, err)
			}
			continue
		case errors.Is(err, hub.ErrEnded):
			return "the publisher left"
		default:
			return "reader: " + err.Error()
		}
		changes := m.tl.Changes()
		if err := m.write(f, time.Now()); err != nil {
			return endReason(ctx, err)
		}
		if m.tl.Changes() != changes {
			sess.changes.Add(1)
			log.Info("reader continues with a new publisher")
		}
		// At the live edge a frame's last packets go out at once; behind
		// it (the catch-up GOP, a backlog) only whole 7-packet messages.
		if sess.reader.Backlog() == 0 {
			if err := out.Flush(); err != nil {
				return endReason(ctx, err)
			}
		}
		if f.Video != nil {
			if err := sess.waitForRoom(ctx); err != nil {
				return endReason(ctx, err)
			}
		}
	}
}

// waitForRoom returns once the reader's link has taken what it was sent,
// up to maxUnacked.
func (sess *session) waitForRoom(ctx context.Context) error {
	var t *time.Timer
	for {
		unacked, rtt, ok := sess.conn.SendBacklog()
		if !ok {
			return srt.ErrDisconnected
		}
		if unacked <= max(maxUnacked, 2*rtt) {
			return nil
		}
		if t == nil {
			t = time.NewTimer(roomPoll)
			defer t.Stop()
		} else {
			t.Reset(roomPoll)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}

// endReason says why a reader ended, for the log and the event: the
// context's cause when it ended (the reader left, a kick, shutdown),
// else err.
func endReason(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	switch {
	case err == nil:
		return "closed"
	case errors.Is(err, srt.ErrDisconnected):
		return srt.ErrDisconnected.Error()
	case errors.Is(err, context.Canceled):
		return "server shutdown"
	}
	return err.Error()
}

// APISessions lists the SRT readers for the control API, next to the
// WHEP sessions; Packets counts SRT messages.
func (s *Server) APISessions() []api.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]api.Session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		out = append(out, api.Session{ID: sess.id, Path: sess.path, Remote: sess.remote, State: "srt",
			Since: sess.since, Packets: sess.messages.Load(), Bytes: sess.bytes.Load(), Dropped: sess.reader.Dropped()})
	}
	return out
}

// KickSession ends an SRT reader; false when there is no such session.
func (s *Server) KickSession(id string) bool {
	s.mu.Lock()
	sess := s.sessions[id]
	s.mu.Unlock()
	if sess == nil {
		return false
	}
	sess.cancel(errKicked)
	sess.conn.CloseWith(errKicked.Error())
	return true
}

// Stats are the SRT readers' counters, for metrics.
type Stats struct {
	Readers int    // connected now
	Opened  uint64 // since start
	Refused uint64 // after the handshake: hook, demand or a limit reached meanwhile
	Bytes   uint64 // sent, departed readers included
}

// Stats reads the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	st := Stats{Readers: len(s.sessions), Opened: s.opened.Load(), Refused: s.refused.Load(), Bytes: s.closedTx.Load()}
	for _, sess := range s.sessions {
		st.Bytes += sess.bytes.Load()
	}
	s.mu.Unlock()
	return st
}
