package srt

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/srtwhep/srtwhep/pkg/lograte"
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
	lim *lograte.Limiter[uint64, limitedLine]
}

type limitedLine struct {
	log   *slog.Logger
	level slog.Level
	msg   string
	area  string
}

func newLogLimiter(every time.Duration) *logLimiter {
	lim := lograte.New(every, maxLineKinds, func(_ uint64, held int, l limitedLine) { write(l, held) })
	lim.Merge = func(sofar, l limitedLine) limitedLine {
		if sofar.log == nil || l.level >= sofar.level {
			return l
		}
		return sofar
	}
	// libsrt may say nothing more after a flood, and Cleanup is far
	// away: a timer writes the summary when the interval ends.
	lim.After = func(d time.Duration, f func()) lograte.Stopper { return time.AfterFunc(d, f) }
	return &logLimiter{lim: lim}
}

// log writes l now or folds it into the next summary of its kind.
func (ll *logLimiter) log(l limitedLine) {
	if !l.log.Enabled(context.Background(), l.level) {
		return // a line nobody sees must not use up the budget
	}
	switch n := ll.lim.Note(kindOf(l), l); {
	case n == 1:
		write(l, 0)
	case n > 1:
		write(l, n)
	}
}

// stop cancels a pending flush and does it now.
func (ll *logLimiter) stop() { ll.lim.Close() }

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
