package srt

import (
	"log/slog"
	"strings"
	"sync"
	"time"
)

// rejectEvery spaces the lines of one kind of handshake rejection: a flood
// of bad handshakes (wrong streamids, refused paths) from many addresses
// would otherwise write a line per handshake. The first of a kind is
// logged at once, the rest of that second are folded into one line with
// their count and a few of their addresses.
const (
	rejectEvery    = time.Second
	rejectExamples = 3
	// rejectKinds bounds the table: kinds are who × reason, a few dozen.
	rejectKinds = 64
)

type rejectLog struct {
	mu    sync.Mutex
	kinds map[string]*rejectKind
}

type rejectKind struct {
	last     time.Time
	folded   int
	examples []string
	pending  bool // a summary is scheduled
	log      *slog.Logger
	msg      string
	attrs    []any // of the latest folded line
}

// warn logs one rejection or folds it into the next summary of its kind.
// It runs on libsrt's receive thread: nothing here blocks for long.
func (rl *rejectLog) warn(log *slog.Logger, kind, msg, remote string, attrs ...any) {
	now := time.Now()
	rl.mu.Lock()
	if rl.kinds == nil || len(rl.kinds) >= rejectKinds && rl.kinds[kind] == nil {
		rl.kinds = map[string]*rejectKind{}
	}
	k := rl.kinds[kind]
	if k == nil {
		k = &rejectKind{}
		rl.kinds[kind] = k
	}
	if k.last.IsZero() || now.Sub(k.last) >= rejectEvery && !k.pending {
		k.last = now
		rl.mu.Unlock()
		log.Warn(msg, attrs...)
		return
	}
	k.folded++
	if len(k.examples) < rejectExamples {
		k.examples = append(k.examples, remote)
	}
	k.log, k.msg, k.attrs = log, msg, attrs
	if !k.pending {
		k.pending = true
		time.AfterFunc(k.last.Add(rejectEvery).Sub(now), func() { rl.flush(kind) })
	}
	rl.mu.Unlock()
}

// flush writes the summary of one kind's folded rejections.
func (rl *rejectLog) flush(kind string) {
	rl.mu.Lock()
	k := rl.kinds[kind]
	if k == nil || k.folded == 0 {
		if k != nil {
			k.pending = false
		}
		rl.mu.Unlock()
		return
	}
	log, msg := k.log, k.msg
	attrs := append(append([]any{}, k.attrs...), "count", k.folded, "examples", strings.Join(k.examples, ","))
	k.folded, k.examples, k.pending, k.last = 0, k.examples[:0], false, time.Now()
	rl.mu.Unlock()
	// The message stays the same, so a search for it finds summaries
	// too; count says how many it stands for, the attributes are the
	// latest one's.
	log.Warn(msg, attrs...)
}
