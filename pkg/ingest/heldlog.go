package ingest

import (
	"context"
	"log/slog"
	"sync"
)

// maxHeld bounds the lines held back for one publisher: a refused one
// writes about five before it is closed.
const maxHeld = 64

// heldLog holds back a publisher's log lines until it is known whether
// it is the same refusal again (the lines are dropped and counted) or
// something worth reading (they are written, in order).
type heldLog struct {
	mu      sync.Mutex
	decided bool
	pass    bool
	held    []heldRecord
}

type heldRecord struct {
	h slog.Handler
	r slog.Record
}

// release decides: pass writes what was held and everything after it,
// otherwise all of it is dropped. Only the first call counts; a nil
// heldLog held nothing.
func (l *heldLog) release(pass bool) {
	if l == nil {
		return
	}
	l.mu.Lock()
	if l.decided {
		l.mu.Unlock()
		return
	}
	l.decided, l.pass = true, pass
	held := l.held
	l.held = nil
	l.mu.Unlock()
	if pass {
		for _, hr := range held {
			_ = hr.h.Handle(context.Background(), hr.r)
		}
	}
}

// logger derives a logger from base whose lines go through l.
func (l *heldLog) logger(base *slog.Logger) *slog.Logger {
	return slog.New(heldHandler{h: base.Handler(), l: l})
}

type heldHandler struct {
	h slog.Handler
	l *heldLog
}

func (x heldHandler) Enabled(ctx context.Context, lvl slog.Level) bool { return x.h.Enabled(ctx, lvl) }

func (x heldHandler) Handle(ctx context.Context, r slog.Record) error {
	x.l.mu.Lock()
	if x.l.decided {
		pass := x.l.pass
		x.l.mu.Unlock()
		if pass {
			return x.h.Handle(ctx, r)
		}
		return nil
	}
	if len(x.l.held) < maxHeld {
		x.l.held = append(x.l.held, heldRecord{h: x.h, r: r.Clone()})
	}
	x.l.mu.Unlock()
	return nil
}

func (x heldHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return heldHandler{h: x.h.WithAttrs(attrs), l: x.l}
}

func (x heldHandler) WithGroup(name string) slog.Handler {
	return heldHandler{h: x.h.WithGroup(name), l: x.l}
}
