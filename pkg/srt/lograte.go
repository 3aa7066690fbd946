package srt

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// libsrtLogEvery is how often libsrt may say the same kind of thing. A
// flood of rogue handshakes makes libsrt write an error line per datagram
// (over 100,000 lines in 10 s were measured), which would drown the real
// log and fill the disk; the lines of one flood all say the same thing.
const libsrtLogEvery = time.Second

// maxLibsrtLine bounds one forwarded line: libsrt quotes what peers sent.
const maxLibsrtLine = 512

// maxLineKinds bounds the table of kinds; past it, lines of new kinds
// share one entry (so a flood of ever-new kinds is still one line a
// second).
const maxLineKinds = 32

// logLimiter lets one line of each kind through per interval and folds
// the rest of that kind into a summary written when the interval ends: the
// latest of them at the highest level seen, with how many were folded. A
// line's kind is its area and its text with numbers and addresses blanked,
// so "Incorrect passphrase" is never hidden behind a burst of "Password
// required", while one flood is one line a second. It is safe for use from
// libsrt's threads, which call the log handler concurrently.
type logLimiter struct {
	every time.Duration
	now   func() time.Time
	// after schedules the summaries; time.AfterFunc outside tests.
	after func(time.Duration, func()) stopper

	mu    sync.Mutex
	kinds map[uint64]*lineKind
	timer stopper // the pending flush, nil when none
}

type lineKind struct {
	lastEmit   time.Time
	suppressed int
	last       limitedLine
}

type stopper interface{ Stop() bool }

type limitedLine struct {
	log   *slog.Logger
	level slog.Level
	msg   string
	area  string
}

func newLogLimiter(every time.Duration) *logLimiter {
	return &logLimiter{every: every, now: time.Now, kinds: map[uint64]*lineKind{},
		after: func(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }}
}

// log writes l now or folds it into the next summary of its kind.
func (ll *logLimiter) log(l limitedLine) {
	if !l.log.Enabled(context.Background(), l.level) {
		return // a line nobody sees must not use up the budget
	}
	key := kindOf(l)
	ll.mu.Lock()
	now := ll.now()
	k := ll.kinds[key]
	if k == nil {
		if len(ll.kinds) >= maxLineKinds-1 { // one entry is kept for overflowKind
			key = overflowKind
			k = ll.kinds[key]
		}
		if k == nil {
			k = &lineKind{}
			ll.kinds[key] = k
		}
	}
	if k.suppressed == 0 && (k.lastEmit.IsZero() || now.Sub(k.lastEmit) >= ll.every) {
		k.lastEmit = now
		ll.mu.Unlock()
		write(l, 0)
		return
	}
	if k.suppressed == 0 || l.level >= k.last.level {
		k.last = l
	}
	k.suppressed++
	if ll.timer == nil {
		ll.timer = ll.after(max(k.lastEmit.Add(ll.every).Sub(now), 0), ll.flush)
	}
	ll.mu.Unlock()
}

// flush writes the summary of every kind with folded lines and forgets
// the kinds that have been quiet for an interval.
func (ll *logLimiter) flush() {
	ll.mu.Lock()
	now := ll.now()
	ll.timer = nil
	var out []limitedLine
	var counts []int
	for key, k := range ll.kinds {
		switch {
		case k.suppressed > 0:
			out, counts = append(out, k.last), append(counts, k.suppressed)
			k.suppressed, k.lastEmit = 0, now
		case now.Sub(k.lastEmit) >= ll.every:
			delete(ll.kinds, key)
		}
	}
	ll.mu.Unlock()
	for i, l := range out {
		write(l, counts[i])
	}
}

// stop cancels a pending flush and does it now.
func (ll *logLimiter) stop() {
	ll.mu.Lock()
	t := ll.timer
	ll.mu.Unlock()
	if t != nil && t.Stop() {
		ll.flush()
	}
}

// overflowKind is the one entry lines of new kinds share once the table is
// full (kindOf never returns it: FNV of anything is not 0 in practice).
const overflowKind = 0

// kindOf hashes l's area and the first 80 bytes of its text with every
// word that holds a digit (counts, socket ids, addresses, ports, hex)
// left out. It runs on libsrt's receive thread for every line of a flood,
// so it allocates nothing.
func kindOf(l limitedLine) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(l.area); i++ {
		h = (h ^ uint64(l.area[i])) * prime
	}
	h = (h ^ '|') * prime
	msg := l.msg[:min(len(l.msg), 80)]
	for len(msg) > 0 {
		word := msg
		rest := ""
		if i := strings.IndexByte(msg, ' '); i >= 0 {
			word, rest = msg[:i], msg[i+1:]
		}
		if !strings.ContainsAny(word, "0123456789") {
			for i := 0; i < len(word); i++ {
				h = (h ^ uint64(word[i])) * prime
			}
		}
		h = (h ^ ' ') * prime
		msg = rest
	}
	return h
}

func write(l limitedLine, suppressed int) {
	attrs := []any{"component", "libsrt", "area", l.area}
	if suppressed > 0 {
		// The line is the latest of those held back; "suppressed" counts
		// them, this one included.
		attrs = append(attrs, "suppressed", suppressed, "interval", libsrtLogEvery.String())
	}
	msg := l.msg
	if len(msg) > maxLibsrtLine {
		msg = msg[:maxLibsrtLine] + "…"
	}
	l.log.Log(context.Background(), l.level, msg, attrs...)
}
