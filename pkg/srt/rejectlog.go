package srt

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/srtwhep/srtwhep/pkg/lograte"
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

// rejectLog is usable as its zero value; close writes what it holds.
type rejectLog struct {
	once sync.Once
	lim  *lograte.Limiter[string, rejection]
}

// rejection is the latest folded line of a kind, with the first few
// addresses folded into it.
type rejection struct {
	log      *slog.Logger
	msg      string
	attrs    []any
	examples []string
}

func (rl *rejectLog) limiter() *lograte.Limiter[string, rejection] {
	rl.once.Do(func() {
		rl.lim = lograte.New(rejectEvery, rejectKinds, func(_ string, held int, r rejection) {
			// The message stays the same, so a search for it finds
			// summaries too; count says how many it stands for, the
			// attributes are the latest one's.
			r.log.Warn(r.msg, slices.Concat(r.attrs, []any{"count", held, "examples", strings.Join(r.examples, ",")})...)
		})
		rl.lim.Merge = func(sofar, r rejection) rejection {
			remote := r.examples[0]
			r.examples = sofar.examples
			if len(r.examples) < rejectExamples {
				r.examples = append(r.examples, remote)
			}
			return r
		}
		rl.lim.After = func(d time.Duration, f func()) lograte.Stopper { return time.AfterFunc(d, f) }
	})
	return rl.lim
}

// warn logs one rejection or folds it into the next summary of its kind.
// It runs on libsrt's receive thread: nothing here blocks for long.
func (rl *rejectLog) warn(log *slog.Logger, kind, msg, remote string, attrs ...any) {
	n := rl.limiter().Note(kind, rejection{log: log, msg: msg, attrs: attrs, examples: []string{remote}})
	switch {
	case n == 1:
		log.Warn(msg, attrs...)
	case n > 1: // the kind's summary was not written yet: this line is it
		log.Warn(msg, slices.Concat(attrs, []any{"count", n, "examples", remote})...)
	}
}

// close writes the rejections still held.
func (rl *rejectLog) close() { rl.limiter().Close() }
