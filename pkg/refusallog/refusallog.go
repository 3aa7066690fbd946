// Package refusallog writes the log lines of the requests srtwhep's WHEP
// endpoints and their extensions refuse (and of the sessions closed
// unused), rate-limited per problem slug with pkg/lograte: at most one
// line per slug an interval, which carries the number of refusals of that
// slug suppressed since the previous line; those of a flood's last
// interval get a "held back" line of their own. The slugs are a fixed
// set, so the table stays small.
package refusallog

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/srtwhep/srtwhep/pkg/lograte"
	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

// Every is how often each kind of refusal may be logged: a misconfigured
// player retrying in a loop, or a scan, must not flood the log, yet the
// first refusal of each kind shows at once.
const Every = time.Second

// Log is one message's refusal lines ("offer refused", say).
type Log struct {
	log *slog.Logger
	msg string
	// lim counts by slug; a held refusal's value is its status.
	lim *lograte.Limiter[string, int]
}

// New is a refusal log whose lines read msg.
func New(log *slog.Logger, msg string) *Log {
	l := &Log{log: log, msg: msg}
	l.lim = lograte.New(Every, 64, func(slug string, held, status int) {
		// Not itself a refusal, so a line of its own: msg still finds
		// it, and counting stays exact (a refusal line is one refusal
		// plus those it held back, this one only those).
		l.log.Warn(l.msg+": held back", "reason", slug, "status", status, "suppressed", held)
	})
	return l
}

// Refused logs (or counts, within the slug's interval) one refused
// request. offer is the body, "" when none was read; its codecs are read
// only for a line that is written, so a flood of refusals costs no scans.
func (l *Log) Refused(r *http.Request, path string, status int, slug, detail, offer string) {
	remote := ""
	if r != nil {
		remote = r.RemoteAddr
	}
	l.RefusedFrom(remote, path, status, slug, detail, offer)
}

// RefusedFrom is Refused for a request already answered: remote is its
// client's address.
func (l *Log) RefusedFrom(remote, path string, status int, slug, detail, offer string) {
	n := l.lim.Note(slug, status)
	if n == 0 {
		return
	}
	l.log.Warn(l.msg, "reason", slug, "status", status, "path", path, "remote", remote,
		"codecs", offeredCodecs(offer), "detail", strings.Join(strings.Fields(detail), " "), "suppressed", n-1)
}

// Flush logs the refusals held back whose interval is over (all of them
// with final, when the server stops). Without it the count of a flood's
// last interval would wait for the next refusal, which may never come.
// Its owner calls it every Every (the WHEP server's Run does), so no
// limiter needs a goroutine of its own.
func (l *Log) Flush(final bool) {
	if final {
		l.lim.Close()
		return
	}
	l.lim.Flush()
}

// offeredCodecs names the codecs of an offer's audio and video sections
// (from its a=rtpmap lines, each name once, in offer order), for the log
// line of a refusal. It reads the raw body, so it names them also for an
// offer the parser refused, which is when an operator needs them most
// (a browser without H.264). At most maxLoggedCodecs names.
func offeredCodecs(raw string) string {
	const maxLoggedCodecs = 16
	return strings.Join(sdpoffer.CodecNames(raw, maxLoggedCodecs), ",")
}
