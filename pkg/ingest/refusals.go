package ingest

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/srtwhep/srtwhep/pkg/lograte"
	"github.com/srtwhep/srtwhep/pkg/tsdemux"
)

// Problem is why a path's viewers get no picture. The person who sees it
// is the one opening the player, not the one reading the server's log, so
// it is kept per path and handed to every viewer's POST (a 409 problem
// detail) and to /v1/paths.
type Problem struct {
	// Reason is a stable slug (the Reason* constants), for metrics and
	// clients that branch on it.
	Reason string
	// Text says what happened and how to fix it on the encoder, for
	// ffmpeg, OBS (Simple and Advanced output mode) and GStreamer.
	Text   string
	Remote string    // the publisher's address
	At     time.Time // when it was last seen
	// Live: the publisher still streams but sends nothing a browser can
	// show; false: the publisher was refused and closed.
	Live bool
	// Count is how many publishers in a row were refused (or warned) for
	// Reason on this path since the record was made.
	Count int
}

// The reasons a publisher is refused or its picture is undecodable.
const (
	ReasonBFrames   = "bframes"
	ReasonNoH264    = "no-h264"
	ReasonNotMPEGTS = "not-mpegts"
	ReasonProfile   = "unplayable-profile"
	ReasonNoPicture = "no-idr"
	// The transcode the stream needs for browsers was refused: the
	// server's transcode CPU budget (transcode.maxCPUPercent) is used up,
	// or its pictures are larger than transcode.maxDecodeArea. Live
	// problems: the publisher streams on, its video is withheld, and the
	// transcode is tried again at each IDR.
	ReasonTranscodeBudget = "transcode-budget"
	ReasonPictureTooLarge = "picture-too-large"
	problemFor            = 60 * time.Second // a refusal record's life without a new refusal
	// refusalSummaryEvery: an encoder refused in a loop (srtsink
	// reconnects every 200 ms, OBS every few seconds) is logged in full
	// once, then in one line per interval with the count.
	refusalSummaryEvery = 10 * time.Second
	maxProblems         = 1000 // paths with a record; probing names cannot grow memory
	defaultPictureWait  = 5 * time.Second
	// provenAfter is how many pictures from its first IDR on a stream
	// must pass before it counts as playable: the demuxer refuses
	// B-frames at the first B slice, which comes after the IDR and a P
	// picture or two.
	provenAfter = 16
)

// problemFixes name the encoder setting that avoids each problem. OBS's
// Simple output mode has no B-frame or profile field of its own: the
// x264 options box (Enable Advanced Encoder Settings) and Settings >
// Advanced are where a Simple user fixes it.
var problemFixes = map[string]string{
	ReasonBFrames: "ffmpeg -bf 0; OBS Simple output mode: Enable Advanced Encoder Settings, x264 options bframes=0; " +
		"OBS Advanced output mode: x264 options bframes=0 (NVENC/QSV: B-frames 0); GStreamer: x264enc bframes=0. " +
		"Or set video: auto on the server to transcode.",
	ReasonNoH264: "ffmpeg -c:v libx264 -bf 0; OBS Simple output mode: Encoder Software (x264) or Hardware (H.264); " +
		"OBS Advanced output mode: Video Encoder x264 (or an H.264 hardware encoder), not HEVC or AV1; GStreamer: x264enc bframes=0 ! h264parse ! mpegtsmux.",
	ReasonNotMPEGTS: "ffmpeg -f mpegts; OBS (Simple and Advanced output mode): Custom Output (FFmpeg) or Stream with service Custom and an srt:// server; " +
		"GStreamer: mpegtsmux ! srtsink.",
	ReasonProfile: "ffmpeg -pix_fmt yuv420p; OBS Simple and Advanced output mode: Settings > Advanced > Video > Color Format NV12; " +
		"GStreamer: videoconvert ! video/x-raw,format=I420 before x264enc. Or set video: auto on the server to transcode.",
	ReasonNoPicture: "GStreamer: mpegtsmux alignment=7 and h264parse config-interval=-1 before it; " +
		"ffmpeg: -bsf:v dump_extra (and -g 60 for a keyframe every 2 s); OBS Simple and Advanced output mode: Keyframe Interval 2 s.",
}

// problemWhys say what happened, for the person at the player.
var problemWhys = map[string]string{
	ReasonBFrames:   "the publisher was refused: its video has B-frames, which WebRTC browsers cannot play, and this path passes video through (video: passthrough).",
	ReasonNoH264:    "the publisher was refused: its MPEG-TS carries no H.264 video.",
	ReasonNotMPEGTS: "the publisher was refused: no MPEG-TS program tables arrived.",
	ReasonProfile:   "the stream's H.264 profile is 10-bit or 4:2:2/4:4:4, which browsers cannot decode, and this path passes video through (video: passthrough).",
	ReasonNoPicture: "video arrives but no IDR picture with SPS/PPS came within %s, so viewers would get sound and a black picture; the muxer most likely drops the stream headers.",
}

// problemText is what viewers read for reason.
func problemText(reason string) string {
	return problemWhys[reason] + " Fix on the encoder: " + problemFixes[reason]
}

// fixedError is a refusal's error as the publisher's end reason (the
// "publisher closed" line, the publisher.disconnected event): the
// demuxer's words and the fix for every encoder, as viewers get it.
type fixedError struct {
	err    error
	reason string
}

func (e fixedError) Error() string {
	return e.err.Error() + "; fix on the encoder: " + problemFixes[e.reason]
}

func (e fixedError) Unwrap() error { return e.err }

// withFix wraps a refusal's error in fixedError; other errors are
// returned as they are.
func withFix(err error) error {
	if r := refusalReason(err); r != "" {
		return fixedError{err: err, reason: r}
	}
	return err
}

// refusalReason maps a publisher's end to the reason it was refused for;
// "" for ends that say nothing about its stream (EOF, kick, busy path).
func refusalReason(err error) string {
	switch {
	case errors.Is(err, tsdemux.ErrBFrames):
		return ReasonBFrames
	case errors.Is(err, tsdemux.ErrNoH264):
		return ReasonNoH264
	case errors.Is(err, tsdemux.ErrNoPMT):
		return ReasonNotMPEGTS
	}
	return ""
}

// problems is the per-path record of the last problem, bounded in count
// and in age. Its own lock: WHEP POSTs read it and must not wait on the
// manager's.
type problems struct {
	mu     sync.Mutex
	byPath map[string]*Problem
	counts map[string]uint64 // by reason, for the life of the process
	// repeats spaces the summaries of a refusal loop, per path: the
	// count is the caller's to log, so it has no summary function.
	repeats *lograte.Limiter[string, struct{}]
	at      time.Time // note's now, the repeats' clock (read under mu)
}

func (b *problems) init() {
	b.byPath = map[string]*Problem{}
	b.counts = map[string]uint64{}
	b.repeats = lograte.New[string, struct{}](refusalSummaryEvery, maxProblems+1, nil)
	b.repeats.Now = func() time.Time { return b.at }
}

// note records a problem of path; the count goes on while the same reason
// repeats, and restarts with another one. again says the previous
// record was the same reason from the same address: the caller then
// logs nothing but, every refusalSummaryEvery, the summary, which
// summary > 0 asks for (the refusals since the last line).
func (b *problems) note(path, remote, reason string, live bool, now time.Time, text string) (again bool, summary int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.counts[reason]++
	p := b.byPath[path]
	again = p != nil && p.Reason == reason && sameHost(p.Remote, remote)
	if p == nil || p.Reason != reason {
		p = &Problem{Reason: reason}
		b.byPath[path] = p
	}
	p.Text, p.Remote, p.At, p.Live = text, remote, now, live
	p.Count++
	b.at = now
	if again {
		summary = b.repeats.Note(path, struct{}{})
	} else {
		b.repeats.Reset(path) // its caller writes this one in full
	}
	b.pruneLocked(now)
	return again, summary
}

// repeating reports whether path's last publisher from remote's address
// was refused within problemFor: a new one from there is most likely
// the same encoder, reconnecting with the same settings.
func (b *problems) repeating(path, remote string, now time.Time) bool {
	p, ok := b.get(path, now)
	return ok && !p.Live && sameHost(p.Remote, remote)
}

func sameHost(a, b string) bool {
	ha := hostOf(a)
	return ha.IsValid() && ha == hostOf(b)
}

// clear forgets path's problem unless keep says otherwise: a publisher
// that proved its stream playable clears a refusal of an earlier one, and
// one that leaves takes only its own warning with it.
func (b *problems) clear(path string, keep func(Problem) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.byPath[path]; p != nil && !keep(*p) {
		delete(b.byPath, path)
	}
}

// keepRefusal keeps an earlier publisher's refusal; keepProfile keeps the
// live publisher's profile warning, which its first IDR does not cure.
func keepRefusal(p Problem) bool { return !p.Live }
func keepProfile(p Problem) bool { return p.Live && (p.Reason == ReasonProfile || transcodeRefused(p)) }

// transcodeRefused: the live publisher's video is withheld for a refused
// transcode (video.go); its stream's first pictures do not cure that.
func transcodeRefused(p Problem) bool {
	return p.Live && (p.Reason == ReasonTranscodeBudget || p.Reason == ReasonPictureTooLarge)
}

// keepUnlessOwnWarning is keepRefusal for the end of the publisher at
// remote: a publisher that took its path over may have noted a warning
// of its own (its first SPS's profile) before the one it replaced ended,
// and that warning still holds.
func keepUnlessOwnWarning(remote string) func(Problem) bool {
	return func(p Problem) bool { return keepRefusal(p) || p.Remote != remote }
}

func (b *problems) get(path string, now time.Time) (Problem, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.byPath[path]
	if p == nil {
		return Problem{}, false
	}
	if !p.Live && now.Sub(p.At) > problemFor {
		delete(b.byPath, path)
		return Problem{}, false
	}
	return *p, true
}

// snapshot copies the current records, expired ones left out.
func (b *problems) snapshot(now time.Time) map[string]Problem {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pruneLocked(now)
	out := make(map[string]Problem, len(b.byPath))
	for name, p := range b.byPath {
		out[name] = *p
	}
	return out
}

func (b *problems) totals() map[string]uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]uint64, len(b.counts))
	for r, n := range b.counts {
		out[r] = n
	}
	return out
}

func (b *problems) pruneLocked(now time.Time) {
	for name, p := range b.byPath {
		if !p.Live && now.Sub(p.At) > problemFor {
			delete(b.byPath, name)
		}
	}
	evictOldest(b.byPath, maxProblems, func(p *Problem) time.Time { return p.At })
}

// Problem returns why path's viewers get no picture, if anything: a
// recent refusal of its publisher, or a live publisher without a
// decodable picture.
func (m *Manager) Problem(path string) (Problem, bool) {
	return m.problems.get(path, time.Now())
}

// Refusals counts the problems noted since start, and the connections
// closed for showing no stream (connwatch.go), by reason (metric
// srtwhep_publisher_refusals_total).
func (m *Manager) Refusals() map[string]uint64 {
	out := m.problems.totals()
	m.closedMu.Lock()
	for reason, n := range m.closed {
		out[reason] += n
	}
	m.closedMu.Unlock()
	return out
}

// noteEnd records why a publisher was refused, when its end says so, and
// decides on the lines held back for it (nil: none were).
func (m *Manager) noteEnd(c conn, err error, held *heldLog) {
	reason := refusalReason(err)
	if reason == ReasonNotMPEGTS && c.Stats().Bytes == 0 {
		reason = "" // it left before sending anything: nothing to say about its stream
	}
	if reason == "" {
		m.problems.clear(c.Path(), keepUnlessOwnWarning(c.Remote()))
		held.release(true)
		return
	}
	again, summary := m.problems.note(c.Path(), c.Remote(), reason, false, time.Now(), problemText(reason))
	if held == nil || !again {
		held.release(true)
		return
	}
	held.release(false)
	if summary > 0 {
		m.log.Warn("publisher refused again", "path", c.Path(), "remote", c.Remote(), "reason", reason,
			"refusals", summary, "in", refusalSummaryEvery.String(), "detail", problemText(reason))
	}
}

// PublisherLog is srt.Config.PublisherLog: the lines of a publisher from
// the address whose last one was refused are held back (heldlog.go) until
// its end says whether it is the same refusal again.
func (m *Manager) PublisherLog(base *slog.Logger, path, remote string) *slog.Logger {
	if !m.problems.repeating(path, remote, time.Now()) {
		return base
	}
	l := &heldLog{}
	m.heldMu.Lock()
	m.held[path+" "+remote] = l
	m.heldMu.Unlock()
	return l.logger(base)
}

// holdFor returns the held lines PublisherLog began for this publisher;
// a conn that bypassed it (tests) gets its own when it is repeating.
func (m *Manager) holdFor(path, remote string) *heldLog {
	m.heldMu.Lock()
	l := m.held[path+" "+remote]
	delete(m.held, path+" "+remote)
	m.heldMu.Unlock()
	if l == nil && m.problems.repeating(path, remote, time.Now()) {
		l = &heldLog{}
	}
	return l
}

// refusalSink records the transcode refusals of c's video as live
// problems of its path, so its viewers get 409 with the reason.
func (m *Manager) refusalSink(c conn) refusalSink {
	return refusalSink{
		note: func(reason, text string) {
			m.problems.note(c.Path(), c.Remote(), reason, true, time.Now(), text)
		},
		clear: func() {
			m.problems.clear(c.Path(), func(p Problem) bool { return !transcodeRefused(p) || p.Remote != c.Remote() })
		},
		tried: func(reason string) {
			if reason == ReasonPictureTooLarge {
				m.areaRefused.Add(1)
			}
		},
	}
}

// AreaRefused counts the transcodes refused for transcode.maxDecodeArea
// (every try: a withheld path tries again at each IDR); the budget
// counts its own refusals.
func (m *Manager) AreaRefused() uint64 { return m.areaRefused.Load() }
