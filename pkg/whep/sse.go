package whep

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Problem slugs of the event streams.
const (
	probNoEventStream  = "no-event-stream"
	probEventStreams   = "event-stream-limit"
	probBadEventList   = "bad-event-list"
	retryAfterSSEFull  = "10"
	retryAfterSSEFlood = "1"
	// sseMaxBody bounds the POST's event list; the four names fit in 60
	// bytes.
	sseMaxBody = 4 << 10
)

// The titles live beside the slugs they belong to, so the extension stays
// in its files.
func init() {
	problemTitles[probNoEventStream] = "No such event stream"
	problemTitles[probEventStreams] = "Too many event streams"
	problemTitles[probBadEventList] = "Malformed event list"
}

var (
	// sseHeartbeat is how often an idle event stream gets a comment line:
	// proxies and load balancers close a response that stays silent for
	// long (nginx after 60 s by default, many after 30 s).
	sseHeartbeat = 15 * time.Second
	// sseWriteTimeout ends a GET whose reader takes no data, so a dead
	// connection frees its handler.
	sseWriteTimeout = 10 * time.Second
)

// sseURL is a session's SSE entry point, under Config.PublicURL like its
// Location: the streams live on the server that holds the session.
func (s *Server) sseURL(path, id string) string {
	return s.cfg.PublicURL + (&url.URL{Path: "/" + path + "/whep/" + id + "/sse"}).EscapedPath()
}

// sseLink is the Link header of every 201.
func (s *Server) sseLink(path, id string) string {
	return "<" + s.sseURL(path, id) + `>; rel="` + sseRel + `"; events="` + strings.Join(sseEventTypes[:], ",") + `"`
}

// serveSSE answers the event stream URLs, {path}/whep/{session}/sse and
// {path}/whep/{session}/sse/{stream}; false for any other URL.
func (s *Server) serveSSE(w http.ResponseWriter, r *http.Request) bool {
	if s.sse == nil {
		return false
	}
	p := r.URL.Path
	i := strings.LastIndex(p, "/whep/")
	if i <= 0 {
		return false
	}
	path, rest := p[1:i], p[i+len("/whep/"):]
	parts := strings.Split(rest, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] != "sse" {
		return false
	}
	session := parts[0]
	s.cors(w)
	if len(parts) == 2 {
		switch r.Method {
		case http.MethodPost:
			s.handleSSEPost(w, r, path, session)
		case http.MethodOptions:
			s.handleSSEOptions(w, "OPTIONS, POST")
		default:
			w.Header().Set("Allow", "OPTIONS, POST")
			httpError(w, r, http.StatusMethodNotAllowed, probNoEventStream, "POST to this URL creates an event stream; GET the URL in its Location")
		}
		return true
	}
	es := s.sse.lookup(parts[2])
	if es != nil && (es.session != session || es.path != path) {
		es = nil
	}
	switch r.Method {
	case http.MethodGet:
		s.handleSSEGet(w, r, es)
	case http.MethodDelete:
		if es == nil {
			sseNotFound(w, r)
			return true
		}
		s.sse.remove(es)
		w.WriteHeader(http.StatusOK)
	case http.MethodOptions:
		s.handleSSEOptions(w, "OPTIONS, GET, DELETE")
	default:
		w.Header().Set("Allow", "OPTIONS, GET, DELETE")
		httpError(w, r, http.StatusMethodNotAllowed, probNoEventStream, "an event stream is read with GET and ended with DELETE")
	}
	return true
}

// refuseSSE answers and logs a refused event stream request, at most one
// line per kind a second.
func (s *Server) refuseSSE(w http.ResponseWriter, r *http.Request, path string, code int, slug, detail string) {
	s.sseRefusals.refused(r, path, code, slug, detail, "")
	httpError(w, r, code, slug, detail)
}

func sseNotFound(w http.ResponseWriter, r *http.Request) {
	httpError(w, r, http.StatusNotFound, probNoEventStream,
		"no such event stream (deleted, ended with its WHEP session, or never created); POST to the session's server-sent-events Link for a new one")
}

func (s *Server) handleSSEOptions(w http.ResponseWriter, methods string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", methods)
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
	h.Set("Access-Control-Max-Age", preflightMaxAge)
	w.WriteHeader(http.StatusNoContent)
}

// handleSSEPost creates an event stream for the events the body lists (a
// JSON array of names; none: all). Names this server does not send are
// ignored, so a player that asks for layers or scte35 as well still gets
// the rest.
func (s *Server) handleSSEPost(w http.ResponseWriter, r *http.Request, path, session string) {
	sess := s.lookupSession(session)
	if sess == nil || sess.path != path {
		httpError(w, r, http.StatusNotFound, probNoSession,
			"no such WHEP session (closed, or never existed); event streams belong to a live session")
		return
	}
	want, detail := readEventList(r)
	if detail != "" {
		s.refuseSSE(w, r, path, http.StatusBadRequest, probBadEventList, detail)
		return
	}
	es, res := s.sse.open(session, path, want)
	switch res {
	case sseSessionFull:
		w.Header().Set("Retry-After", retryAfterSSEFlood)
		s.refuseSSE(w, r, path, http.StatusTooManyRequests, probEventStreams,
			fmt.Sprintf("this session has %d event streams already; DELETE one before creating another", maxEventStreamsPerSession))
		return
	case sseServerFull:
		w.Header().Set("Retry-After", retryAfterSSEFull)
		s.refuseSSE(w, r, path, http.StatusServiceUnavailable, probEventStreams,
			fmt.Sprintf("the server has %d event streams open, its limit (http.maxEventStreams); retry later", s.cfg.MaxEventStreams))
		return
	case sseClosed:
		w.Header().Set("Retry-After", retryAfterStarting)
		s.refuseSSE(w, r, path, http.StatusServiceUnavailable, probUnavailable, errServerShutdown.Error())
		return
	}
	// The session may have ended while the stream was made; its end has
	// then already swept the session's streams, or sweeps this one now.
	if s.lookupSession(session) == nil {
		s.sse.remove(es)
		sseNotFound(w, r)
		return
	}
	sess.log.Info("event stream opened", "event_stream", es.id)
	w.Header().Set("Location", s.sseURL(path, session)+"/"+es.id)
	w.WriteHeader(http.StatusCreated)
}

// readEventList parses the optional body; detail says what is wrong.
func readEventList(r *http.Request) (want uint8, detail string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, sseMaxBody+1))
	switch {
	case err != nil:
		return 0, "reading the event list failed: " + err.Error()
	case len(body) > sseMaxBody:
		return 0, fmt.Sprintf("event list larger than %d bytes; send a JSON array of event names", sseMaxBody)
	case len(strings.TrimSpace(string(body))) == 0:
		return sseAllEvents, ""
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
		want |= sseEventBit(n)
	}
	return want, ""
}

// handleSSEGet streams es as text/event-stream until the stream ends, the
// client goes, or a newer GET takes the stream over.
func (s *Server) handleSSEGet(w http.ResponseWriter, r *http.Request, es *eventStream) {
	if es == nil {
		sseNotFound(w, r)
		return
	}
	kicked, ok := es.attachReader()
	if !ok {
		sseNotFound(w, r)
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
	if !s.sseWrite(w, rc, "retry: 1000\n\n") {
		return
	}
	heartbeat := time.NewTimer(sseHeartbeat)
	defer heartbeat.Stop()
	var buf []sseEvent
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
			if !s.sseWrite(w, rc, sb.String()) {
				return
			}
			for _, ev := range buf {
				s.sse.sent[bitIndex(sseEventBit(ev.typ))].Add(1)
			}
			heartbeat.Reset(sseHeartbeat)
		}
		select {
		case <-es.wake:
		case <-heartbeat.C:
			if !s.sseWrite(w, rc, ": heartbeat "+strconv.FormatInt(time.Now().Unix(), 10)+"\n\n") {
				return
			}
			heartbeat.Reset(sseHeartbeat)
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
	for i := range sseEventTypes {
		if b == 1<<i {
			return i
		}
	}
	return 0
}

func (s *Server) sseWrite(w http.ResponseWriter, rc *http.ResponseController, text string) bool {
	_ = rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	if _, err := io.WriteString(w, text); err != nil {
		return false
	}
	return rc.Flush() == nil
}

// SSEStats is the event streams' state for the metrics.
type SSEStats struct {
	Streams int
	// Sent counts the events written to readers, by type.
	Sent map[string]uint64
}

// SSEStats reads the event streams' counters.
func (s *Server) SSEStats() SSEStats {
	st := SSEStats{Sent: make(map[string]uint64, len(sseEventTypes))}
	if s.sse == nil {
		return st
	}
	st.Streams = s.sse.len()
	for i, t := range sseEventTypes {
		st.Sent[t] = s.sse.sent[i].Load()
	}
	return st
}
