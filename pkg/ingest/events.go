package ingest

import (
	"context"
	"errors"
	"io"
	"strconv"

	"github.com/srtwhep/srtwhep/pkg/events"
)

// publisherEvent tells the control plane about c. The SRT socket id is
// the publisher's id: the same remote may reconnect to the same path, and
// only the id pairs a disconnect with its connect. An edge's pull (a
// dialed conn) is announced by the edge as source.up/down instead.
func (m *Manager) publisherEvent(kind events.Kind, c conn, reason string) {
	if c.Dialed() {
		return
	}
	m.cfg.Events.Emit(events.Event{Kind: kind, Path: c.Path(), Protocol: "srt", ID: strconv.Itoa(c.SocketID()),
		Remote: c.Remote(), Reason: reason})
}

// endReason says why a publisher's stream ended, in the words of the
// "publisher closed" log line: the stream's error, or else why the
// connection was closed.
func endReason(ctx context.Context, c conn, err error) string {
	if err != nil && !errors.Is(err, io.EOF) && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
		return err.Error()
	}
	if r := c.EndReason(); r != "" {
		return r
	}
	if ctx.Err() != nil {
		return "server shutdown"
	}
	return "closed by server"
}
