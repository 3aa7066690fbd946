package whep

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

// refusalLogEvery is how often each kind of refusal may be logged: a
// misconfigured player retrying in a loop, or a scan, must not flood the
// log, yet the first refusal of each kind shows at once.
const refusalLogEvery = time.Second

// refusalLog rate-limits the "offer refused" lines per problem slug: at
// most one line per slug per refusalLogEvery, which carries the number of
// refusals of that slug suppressed since the previous line. The slugs are
// a fixed set, so the map stays small.
type refusalLog struct {
	log *slog.Logger
	now func() time.Time // time.Now; tests step it
	msg string           // the line's message: "offer refused" unless set

	mu    sync.Mutex
	kinds map[string]*refusalKind
}

type refusalKind struct {
	last       time.Time
	status     int
	suppressed int
}

func newRefusalLog(log *slog.Logger) *refusalLog {
	return namedRefusalLog(log, "offer refused")
}

// namedRefusalLog is a refusalLog whose lines read msg.
func namedRefusalLog(log *slog.Logger, msg string) *refusalLog {
	return &refusalLog{log: log, now: time.Now, msg: msg, kinds: make(map[string]*refusalKind)}
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
	now := l.now()
	l.mu.Lock()
	k := l.kinds[slug]
	if k == nil {
		k = &refusalKind{}
		l.kinds[slug] = k
	}
	if !k.last.IsZero() && now.Sub(k.last) < refusalLogEvery {
		k.suppressed++
		k.status = status
		l.mu.Unlock()
		return
	}
	suppressed := k.suppressed
	k.last, k.suppressed = now, 0
	l.mu.Unlock()
	l.log.Warn(l.msg, "reason", slug, "status", status, "path", path, "remote", remote,
		"codecs", offeredCodecs(offer), "detail", strings.Join(strings.Fields(detail), " "), "suppressed", suppressed)
}

// flush logs the refusals still held back, one line per slug, for the
// slugs whose last line is a full interval old (all of them with final,
// when the server stops). Without it the count of a flood's last second
// would wait for the next refusal of its kind, which may never come. The
// server's Run calls it every refusalLogEvery, so no limiter needs a
// goroutine of its own.
func (l *refusalLog) flush(now time.Time, final bool) {
	type held struct {
		slug               string
		status, suppressed int
	}
	var out []held
	l.mu.Lock()
	for slug, k := range l.kinds {
		if k.suppressed == 0 || (!final && now.Sub(k.last) < refusalLogEvery) {
			continue
		}
		out = append(out, held{slug, k.status, k.suppressed})
		k.last, k.suppressed = now, 0
	}
	l.mu.Unlock()
	for _, h := range out {
		// Not itself a refusal, so a line of its own: "offer refused"
		// still finds it, and counting stays exact (a refusal line is
		// one refusal plus those it held back, this one only those).
		l.log.Warn(l.msg+": held back", "reason", h.slug, "status", h.status, "suppressed", h.suppressed)
	}
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
