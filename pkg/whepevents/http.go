package whepevents

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/srtwhep/srtwhep/pkg/httpcors"
	"github.com/srtwhep/srtwhep/pkg/httpproblem"
	"github.com/srtwhep/srtwhep/pkg/whep"
)

// Problem slugs of the event streams, and their titles.
const (
	probNoEventStream = "no-event-stream"
	probEventStreams  = "event-stream-limit"
	probBadEventList  = "bad-event-list"
	// Those of the WHEP endpoints the extension answers too.
	probNoSession   = "no-session"
	probUnavailable = "unavailable"
)

var problemTitles = map[string]string{
	probNoEventStream: "No such event stream",
	probEventStreams:  "Too many event streams",
	probBadEventList:  "Malformed event list",
	probNoSession:     "No such session",
	probUnavailable:   "Server not serving",
}

const (
	retryAfterFull     = "10"
	retryAfterFlood    = "1"
	retryAfterStopping = "1"
	// maxBody bounds the POST's event list; the four names fit in 60
	// bytes.
	maxBody = 4 << 10
)

var (
	// heartbeatEvery is how often an idle event stream gets a comment
	// line: proxies and load balancers close a response that stays silent
	// for long (nginx after 60 s by default, many after 30 s).
	heartbeatEvery = 15 * time.Second
	// writeTimeout ends a GET whose reader takes no data, so a dead
	// connection frees its handler.
	writeTimeout = 10 * time.Second
)

func httpError(w http.ResponseWriter, r *http.Request, code int, slug, detail string) {
	httpproblem.Write(w, r, code, slug, problemTitles[slug], detail)
}

// sseURL is a session's SSE entry point, under Config.PublicURL like its
// Location: the streams live on the server that holds the session.
func (e *Streams) sseURL(path, id string) string {
	return whep.SessionURL(e.cfg.PublicURL, path, id, "/sse")
}

// Link is the Link header of every 201 (whep.Extension).
func (e *Streams) Link(path, id string) string {
	return "<" + e.sseURL(path, id) + `>; rel="` + Rel + `"; events="` + strings.Join(e.sends(), ",") + `"`
}

// Handler answers the event stream URLs, {path}/whep/{session}/sse and
// {path}/whep/{session}/sse/{stream}; every other request goes to next.
func (e *Streams) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !e.serve(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

// serve answers the event stream URLs; false for any other URL.
func (e *Streams) serve(w http.ResponseWriter, r *http.Request) bool {
	path, session, sub, ok := whep.SplitSessionURL(r.URL.Path)
	stream, hasStream := strings.CutPrefix(sub, "/sse/")
	if !ok || sub != "/sse" && (!hasStream || strings.Contains(stream, "/")) {
		return false
	}
	// As on the WHEP endpoints: the same page reads both.
	httpcors.Allow(w.Header(), e.cfg.AllowOrigin)
	if !hasStream {
		switch r.Method {
		case http.MethodPost:
			e.handlePost(w, r, path, session)
		case http.MethodOptions:
			e.handleOptions(w, "OPTIONS, POST")
		default:
			w.Header().Set("Allow", "OPTIONS, POST")
			httpError(w, r, http.StatusMethodNotAllowed, probNoEventStream, "POST to this URL creates an event stream; GET the URL in its Location")
		}
		return true
	}
	es := e.lookup(stream)
	if es != nil && (es.session != session || es.path != path) {
		es = nil
	}
	switch r.Method {
	case http.MethodGet:
		e.handleGet(w, r, es)
	case http.MethodDelete:
		if es == nil {
			notFound(w, r)
			return true
		}
		e.remove(es)
		w.WriteHeader(http.StatusOK)
	case http.MethodOptions:
		e.handleOptions(w, "OPTIONS, GET, DELETE")
	default:
		w.Header().Set("Allow", "OPTIONS, GET, DELETE")
		httpError(w, r, http.StatusMethodNotAllowed, probNoEventStream, "an event stream is read with GET and ended with DELETE")
	}
	return true
}

// refuse answers and logs a refused event stream request.
func (e *Streams) refuse(w http.ResponseWriter, r *http.Request, path string, code int, slug, detail string) {
	e.cfg.Refused(r, path, code, slug, detail)
	httpError(w, r, code, slug, detail)
}

func notFound(w http.ResponseWriter, r *http.Request) {
	httpError(w, r, http.StatusNotFound, probNoEventStream,
		"no such event stream (deleted, ended with its WHEP session, or never created); POST to the session's server-sent-events Link for a new one")
}

func (e *Streams) handleOptions(w http.ResponseWriter, methods string) {
	httpcors.Preflight(w.Header(), methods, "Authorization, Content-Type")
	w.WriteHeader(http.StatusNoContent)
}

// handlePost creates an event stream for the events the body lists (a
// JSON array of names; none: all). Names this server does not send are
// ignored, so a player that asks for scte35 (or layers, without the layer
// extension) as well still gets the rest.
func (e *Streams) handlePost(w http.ResponseWriter, r *http.Request, path, session string) {
	if !e.cfg.Session(path, session) {
		httpError(w, r, http.StatusNotFound, probNoSession,
			"no such WHEP session (closed, or never existed); event streams belong to a live session")
		return
	}
	want, detail := readEventList(r)
	if detail != "" {
		e.refuse(w, r, path, http.StatusBadRequest, probBadEventList, detail)
		return
	}
	es, res := e.open(session, path, want)
	switch res {
	case sessionFull:
		w.Header().Set("Retry-After", retryAfterFlood)
		e.refuse(w, r, path, http.StatusTooManyRequests, probEventStreams,
			fmt.Sprintf("this session has %d event streams already; DELETE one before creating another", maxEventStreamsPerSession))
		return
	case serverFull:
		w.Header().Set("Retry-After", retryAfterFull)
		e.refuse(w, r, path, http.StatusServiceUnavailable, probEventStreams,
			fmt.Sprintf("the server has %d event streams open, its limit (http.maxEventStreams); retry later", e.cfg.MaxStreams))
		return
	case shutDown:
		w.Header().Set("Retry-After", retryAfterStopping)
		e.refuse(w, r, path, http.StatusServiceUnavailable, probUnavailable, "server is shutting down")
		return
	}
	// The session may have ended while the stream was made; its end has
	// then already swept the session's streams, or sweeps this one now.
	if !e.cfg.Session(path, session) {
		e.remove(es)
		notFound(w, r)
		return
	}
	e.log.Info("event stream opened", "path", path, "session", session, "remote", r.RemoteAddr, "event_stream", es.id)
	w.Header().Set("Location", e.sseURL(path, session)+"/"+es.id)
	w.WriteHeader(http.StatusCreated)
}

// readEventList parses the optional body; detail says what is wrong.
func readEventList(r *http.Request) (want uint8, detail string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	switch {
	case err != nil:
		return 0, "reading the event list failed: " + err.Error()
	case len(body) > maxBody:
		return 0, fmt.Sprintf("event list larger than %d bytes; send a JSON array of event names", maxBody)
	case len(strings.TrimSpace(string(body))) == 0:
		return allEvents, ""
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return 0, fmt.Sprintf("Content-Type must be application/json, got %q", ct)
		}
	}
	var names []string
	if err := json.Unmarshal(body, &names); err != nil {
		return 0, fmt.Sprintf("the body must be a JSON array of event names such as [%q,%q]: %v", evActive, evViewerCount, err)
	}
	for _, n := range names {
		want |= eventBit(n)
	}
	return want, ""
}

// handleGet streams es as text/event-stream until the stream ends, the
// client goes, or a newer GET takes the stream over.
func (e *Streams) handleGet(w http.ResponseWriter, r *http.Request, es *eventStream) {
	if es == nil {
		notFound(w, r)
		return
	}
	kicked, ok := es.attachReader()
	if !ok {
		notFound(w, r)
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	// nginx buffers responses unless told not to.
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// retry: how soon an EventSource comes back after a broken connection.
	if !e.write(w, rc, "retry: 1000\n\n") {
		return
	}
	heartbeat := time.NewTimer(heartbeatEvery)
	defer heartbeat.Stop()
	var buf []event
	var sb strings.Builder
	for {
		buf = es.take(buf)
		if len(buf) > 0 {
			sb.Reset()
			for _, ev := range buf {
				sb.WriteString("event: ")
				sb.WriteString(ev.typ)
				sb.WriteString("\ndata: ")
				sb.Write(ev.data)
				sb.WriteString("\n\n")
			}
			if !e.write(w, rc, sb.String()) {
				return
			}
			for _, ev := range buf {
				e.sent[bitIndex(eventBit(ev.typ))].Add(1)
			}
			heartbeat.Reset(heartbeatEvery)
		}
		select {
		case <-es.wake:
		case <-heartbeat.C:
			if !e.write(w, rc, ": heartbeat "+strconv.FormatInt(time.Now().Unix(), 10)+"\n\n") {
				return
			}
			heartbeat.Reset(heartbeatEvery)
		case <-es.done:
			return
		case <-kicked:
			return
		case <-r.Context().Done():
			return
		}
	}
}

func bitIndex(b uint8) int {
	for i := range eventTypes {
		if b == 1<<i {
			return i
		}
	}
	return 0
}

func (e *Streams) write(w http.ResponseWriter, rc *http.ResponseController, text string) bool {
	_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := io.WriteString(w, text); err != nil {
		return false
	}
	return rc.Flush() == nil
}

// Stats is the event streams' state for the metrics.
type Stats struct {
	Streams int
	// Sent counts the events written to readers, by type.
	Sent map[string]uint64
}

// Stats reads the event streams' counters.
func (e *Streams) Stats() Stats {
	st := Stats{Sent: make(map[string]uint64, len(eventTypes)), Streams: e.len()}
	for i, t := range eventTypes {
		st.Sent[t] = e.sent[i].Load()
	}
	return st
}
