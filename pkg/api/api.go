// Package api serves srtwhep's control API under /v1 on a listener of its
// own (api.listen; NotServed answers for it on the WHEP listener): JSON views of the live paths and viewer sessions, and kicking a session or
// a publisher. The ingest and WHEP servers describe themselves in this
// package's types (PathSource, SessionSource), so it imports neither;
// access is decided by the auth policy.
package api

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/pathname"
)

// Path is one published path as GET /v1/paths shows it.
type Path struct {
	Name      string     `json:"name"`
	Publisher *Publisher `json:"publisher"` // null when nobody publishes
	Codec     string     `json:"codec"`
	Profile   string     `json:"profile,omitempty"`
	Width     int        `json:"width"`
	Height    int        `json:"height"`
	FPS       float64    `json:"fps"`
	// IngestBitrate is libsrt's current receive rate in bits per second.
	IngestBitrate float64 `json:"ingestBitrate"`
	IngestBytes   uint64  `json:"ingestBytes"`
	IngestFrames  uint64  `json:"ingestFrames"`
	Readers       int     `json:"readers"`
	// Dropped counts frames lost on the way: skipped for slow viewers and
	// discarded as undecodable.
	Dropped uint64 `json:"dropped"`
	// Audio is null when the stream has no audio (or audio is off).
	Audio *Audio `json:"audio"`
	// Transcode is null while the path's video passes through as
	// published (video: auto for a stream browsers play, or passthrough).
	Transcode *Transcode `json:"transcode"`
	// Renditions are the path's lower renditions (renditions), each
	// transcoded only while viewers are switched to it: empty when the
	// path has no ladder.
	Renditions []Rendition `json:"renditions"`
	// Refused is the path's last refused publisher (null when none in the
	// last minute, or a publisher since proved its stream playable).
	Refused *Problem `json:"refused"`
	// Warning is null while the live publisher's stream is decodable;
	// otherwise why viewers would see no picture, and the fix.
	Warning *Problem `json:"warning"`
}

// Problem is why a path's viewers get no picture: what happened and the
// fix on the encoder (ffmpeg, OBS, GStreamer).
type Problem struct {
	Reason string    `json:"reason"` // a stable slug: bframes, no-h264, not-mpegts, unplayable-profile, no-idr
	Detail string    `json:"detail"`
	Remote string    `json:"remote"` // the publisher's address
	At     time.Time `json:"at"`     // last seen
	Count  int       `json:"count"`  // publishers in a row with this reason
}

// Transcode describes a path's video transcoder (video: auto/transcode).
type Transcode struct {
	Reason     string  `json:"reason"` // why the path is transcoded
	FramesOut  uint64  `json:"framesOut"`
	CPUSeconds float64 `json:"cpuSeconds"`
	// LatencyMs is the mean time a picture spends in the transcoder.
	LatencyMs float64 `json:"latencyMs"`
}

// Rendition is one lower rendition of a path's video.
type Rendition struct {
	Name    string `json:"name"` // "360p"
	Width   int    `json:"width"`
	Height  int    `json:"height"`
	Bitrate int    `json:"bitrate"` // bit/s, nominal
	Viewers int    `json:"viewers"`
	// Running: its transcoder runs (it has viewers, or had within the
	// last 30 s).
	Running bool `json:"running"`
	// CPUPercent is its transcoder's measured share of one core over the
	// last seconds; 0 while it does not run.
	CPUPercent float64 `json:"cpuPercent"`
	// CPUSeconds is what its transcoders spent, all told.
	CPUSeconds float64 `json:"cpuSeconds"`
}

// Audio describes a path's audio track.
type Audio struct {
	CodecIn             string  `json:"codecIn"`  // as published: AAC, MPEG-1 Audio, Opus
	CodecOut            string  `json:"codecOut"` // as sent to viewers: Opus
	FramesIn            uint64  `json:"framesIn"`
	FramesOut           uint64  `json:"framesOut"`
	Errors              uint64  `json:"errors"`
	TranscodeCPUSeconds float64 `json:"transcodeCpuSeconds"`
}

// Publisher is the SRT caller feeding a path.
type Publisher struct {
	Remote string    `json:"remote"`
	Since  time.Time `json:"since"`
	// RTTMs is libsrt's smoothed round-trip time; 0 when unknown.
	RTTMs       float64 `json:"rttMs"`
	PacketsLost int64   `json:"packetsLost"`
}

// Session is one WHEP viewer as GET /v1/sessions shows it.
type Session struct {
	ID      string    `json:"id"`
	Path    string    `json:"path"`
	Remote  string    `json:"remote"`
	State   string    `json:"state"`
	Since   time.Time `json:"since"`
	Packets uint64    `json:"packets"`
	Bytes   uint64    `json:"bytes"`
	Dropped uint64    `json:"dropped"`
	// Bandwidth is the viewer's bandwidth estimate; null until it has
	// one.
	Bandwidth *Bandwidth `json:"bandwidth"`
}

// Bandwidth is a viewer's bandwidth estimate.
type Bandwidth struct {
	// Bitrate is the estimate in bits per second.
	Bitrate int64 `json:"bitrate"`
	// Source is "transport-cc" (delay and loss from transport-wide
	// feedback) or "receiver-reports" (loss only).
	Source string `json:"source"`
	// Trend is "increasing", "holding" or "decreasing" (cut within the
	// last second).
	Trend string `json:"trend"`
	// SinceDecreaseMs is how long the estimate has gone without a cut
	// (since the viewer started when it never had one).
	SinceDecreaseMs int64 `json:"sinceDecreaseMs"`
}

// PathSource is what the API reads and steers of the publishers.
type PathSource interface {
	APIPaths() []Path
	// KickPublisher disconnects the publisher of path; false when none.
	KickPublisher(path string) bool
}

// SessionSource is what the API reads and steers of the viewers.
type SessionSource interface {
	APISessions() []Session
	// KickSession ends a viewer; false when there is no such session.
	KickSession(id string) bool
}

// Authorizer is the access policy as the API uses it: nil or an
// *auth.Denied for a client (its address, and whether it came through a
// proxy) and its Bearer token.
type Authorizer interface {
	CheckAPI(c auth.Client, token string) error
}

// Config configures the handler. Paths and Sessions are required.
type Config struct {
	Paths      PathSource
	Sessions   SessionSource
	Authorizer Authorizer
	// AllowedHosts are the host names a request's Host header may carry
	// besides localhost and IP addresses (see hostAllowed).
	AllowedHosts []string
	Logger       *slog.Logger
}

// Prefix is where the API lives; the composition root routes it before
// the player page, which would otherwise take every GET.
const Prefix = "/v1/"

// Handler returns the /v1 API.
func Handler(cfg Config) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Authorizer == nil {
		// Without a policy the API answers only this host, which is what
		// an empty api.token means.
		cfg.Authorizer = auth.NewPolicy(auth.Rules{}, auth.ThrottleConfig{})
	}
	a := &handler{cfg: cfg, log: cfg.Logger}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/paths", a.listPaths)
	mux.HandleFunc("GET /v1/paths/{path...}", a.getPath)
	mux.HandleFunc("GET /v1/sessions", a.listSessions)
	mux.HandleFunc("DELETE /v1/sessions/{id}", a.kickSession)
	mux.HandleFunc("DELETE /v1/publishers/{path...}", a.kickPublisher)
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such API endpoint; use GET /v1/paths, GET /v1/paths/PATH, GET /v1/sessions, DELETE /v1/sessions/ID or DELETE /v1/publishers/PATH")
	})
	return a.guard(mux)
}

type handler struct {
	cfg Config
	log *slog.Logger
}

// guard lets a request through only when the policy allows it. A wrong
// token is answered only after the throttle's penalty, which holds this
// request alone.
func (a *handler) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r.Host, a.cfg.AllowedHosts) {
			a.log.Warn("control API request refused", "remote", r.RemoteAddr, "method", r.Method, "url", r.URL.Path,
				"reason", "foreign Host header", "host", clip(r.Host))
			writeError(w, http.StatusMisdirectedRequest, "the control API does not answer for host "+quote(clip(r.Host))+
				"; call it as localhost or by IP address, or add the name to api.allowedHosts")
			return
		}
		token := auth.BearerToken(r.Header)
		client := auth.ClientOf(r)
		err := a.cfg.Authorizer.CheckAPI(client, token)
		if err == nil {
			next.ServeHTTP(w, r)
			return
		}
		d := auth.AsDenied(err)
		if d == nil {
			writeError(w, http.StatusInternalServerError, "cannot check access: "+err.Error())
			return
		}
		d.Wait(r.Context())
		a.log.Warn("control API request refused", "remote", r.RemoteAddr, "forwarded", client.Forwarded,
			"method", r.Method, "url", r.URL.Path, "reason", d.Reason.String())
		// The one table from a policy decision to an HTTP answer.
		switch d.Reason {
		case auth.ReasonForbidden:
			writeError(w, http.StatusForbidden, d.Msg)
			return
		case auth.ReasonThrottled:
			w.Header().Set("Retry-After", auth.RetryAfterSeconds(d.RetryAfter))
			writeError(w, http.StatusTooManyRequests, d.Msg)
			return
		}
		w.Header().Set("WWW-Authenticate", auth.Challenge(d.TokenPresented))
		writeError(w, http.StatusUnauthorized, d.Msg)
	})
}

func (a *handler) listPaths(w http.ResponseWriter, _ *http.Request) {
	paths := a.cfg.Paths.APIPaths()
	slices.SortFunc(paths, func(x, y Path) int { return strings.Compare(x.Name, y.Name) })
	writeJSON(w, http.StatusOK, map[string]any{"paths": nonNil(paths)})
}

func (a *handler) getPath(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("path")
	if !validPath(w, name) {
		return
	}
	for _, p := range a.cfg.Paths.APIPaths() {
		if p.Name == name {
			writeJSON(w, http.StatusOK, p)
			return
		}
	}
	writeError(w, http.StatusNotFound, "no stream is being published on path "+quote(name))
}

func (a *handler) listSessions(w http.ResponseWriter, _ *http.Request) {
	sessions := a.cfg.Sessions.APISessions()
	slices.SortFunc(sessions, func(x, y Session) int {
		if c := x.Since.Compare(y.Since); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
	writeJSON(w, http.StatusOK, map[string]any{"sessions": nonNil(sessions)})
}

func (a *handler) kickSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !a.cfg.Sessions.KickSession(id) {
		writeError(w, http.StatusNotFound, "no such session (closed, or never existed); list them with GET /v1/sessions")
		return
	}
	a.log.Info("session kicked through the API", "session", id, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, map[string]string{"kicked": id})
}

func (a *handler) kickPublisher(w http.ResponseWriter, r *http.Request) {
	path := r.PathValue("path")
	if !validPath(w, path) {
		return
	}
	if !a.cfg.Paths.KickPublisher(path) {
		writeError(w, http.StatusNotFound, "no publisher on path "+quote(path)+"; list paths with GET /v1/paths")
		return
	}
	a.log.Info("publisher kicked through the API", "path", path, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, map[string]string{"kicked": path})
}

// validPath answers 400 for a name no path can have, so a probe never
// reaches a lookup and its answer never echoes more than the cap of it.
func validPath(w http.ResponseWriter, name string) bool {
	if err := pathname.Check(name); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return false
	}
	return true
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}
