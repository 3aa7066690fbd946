package whep

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/srtwhep/srtwhep/pkg/lograte"
	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

// refusalLogEvery is how often each kind of refusal may be logged: a
// misconfigured player retrying in a loop, or a scan, must not flood the
// log, yet the first refusal of each kind shows at once.
const refusalLogEvery = time.Second

// refusalLog rate-limits the "offer refused" lines per problem slug
// (pkg/lograte): at most one line per slug per refusalLogEvery, which
// carries the number of refusals of that slug suppressed since the
// previous line; those of a flood's last second get a "held back" line of
// their own. The slugs are a fixed set, so the table stays small.
type refusalLog struct {
	log *slog.Logger
	msg string // the line's message: "offer refused" unless set
	// lim counts by slug; a held refusal's value is its status.
	lim *lograte.Limiter[string, int]
}

func newRefusalLog(log *slog.Logger) *refusalLog {
	return namedRefusalLog(log, "offer refused")
}

// namedRefusalLog is a refusalLog whose lines read msg.
func namedRefusalLog(log *slog.Logger, msg string) *refusalLog {
	l := &refusalLog{log: log, msg: msg}
	l.lim = lograte.New(refusalLogEvery, 64, func(slug string, held, status int) {
		// Not itself a refusal, so a line of its own: "offer refused"
		// still finds it, and counting stays exact (a refusal line is
		// one refusal plus those it held back, this one only those).
		l.log.Warn(l.msg+": held back", "reason", slug, "status", status, "suppressed", held)
	})
	return l
}

// refused logs (or counts, within the slug's second) one refused request.
// offer is the body, "" when none was read; its codecs are read only for
// a line that is written, so a flood of refusals costs no scans.
func (l *refusalLog) refused(r *http.Request, path string, status int, slug, detail, offer string) {
	remote := ""
	if r != nil {
		remote = r.RemoteAddr
	}
	l.refusedFrom(remote, path, status, slug, detail, offer)
}

// refusedFrom is refused for a request already answered: remote is its
// client's address.
func (l *refusalLog) refusedFrom(remote, path string, status int, slug, detail, offer string) {
	n := l.lim.Note(slug, status)
	if n == 0 {
		return
	}
	l.log.Warn(l.msg, "reason", slug, "status", status, "path", path, "remote", remote,
		"codecs", offeredCodecs(offer), "detail", strings.Join(strings.Fields(detail), " "), "suppressed", n-1)
}

// flush logs the refusals held back whose interval is over (all of them
// with final, when the server stops). Without it the count of a flood's
// last second would wait for the next refusal, which may never come. The
// server's Run calls it every refusalLogEvery, so no limiter needs a
// goroutine of its own.
func (l *refusalLog) flush(final bool) {
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
