package whep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/pathname"
	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

const (
	mimeSDP     = "application/sdp"
	mimeSDPFrag = "application/trickle-ice-sdpfrag"

	// Retry-After values: a full path frees up when someone leaves, which
	// takes a while; a handshake slot within a second or two.
	retryAfterFull       = "10"
	retryAfterHandshakes = "2"
	retryAfterStarting   = "1"
)

// Handler serves POST {/path}/whep, PATCH and DELETE {/path}/whep/{id}, and
// OPTIONS on both; every other request goes to fallback (nil: 404).
func (s *Server) Handler(fallback http.Handler) http.Handler {
	if fallback == nil {
		fallback = http.NotFoundHandler()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if path, ok := strings.CutSuffix(p, "/whep"); ok && len(path) > 1 {
			switch r.Method {
			case http.MethodPost:
				s.cors(w)
				s.handlePost(w, r, path[1:])
				return
			case http.MethodOptions:
				s.cors(w)
				s.handleOptions(w, true)
				return
			}
		}
		if i := strings.LastIndex(p, "/whep/"); i > 0 {
			path, id := p[1:i], p[i+len("/whep/"):]
			if id != "" && !strings.Contains(id, "/") {
				switch r.Method {
				case http.MethodPatch:
					s.cors(w)
					s.handlePatch(w, r, path, id)
					return
				case http.MethodDelete:
					s.cors(w)
					s.handleDelete(w, path, id)
					return
				case http.MethodOptions:
					s.cors(w)
					s.handleOptions(w, false)
					return
				}
			}
		}
		fallback.ServeHTTP(w, r)
	})
}

// cors is set on every WHEP response: a player page on another origin must
// be able to read Location and ETag, or it cannot PATCH or DELETE.
func (s *Server) cors(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", s.cfg.AllowOrigin)
	h.Set("Access-Control-Expose-Headers", "Location, ETag, Link, Accept-Patch")
	if s.cfg.AllowOrigin != "*" {
		h.Add("Vary", "Origin")
	}
}

func (s *Server) handleOptions(w http.ResponseWriter, endpoint bool) {
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "OPTIONS, POST, PATCH, DELETE")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, If-Match")
	if endpoint {
		h.Set("Accept-Post", mimeSDP)
	} else {
		h.Set("Accept-Patch", mimeSDPFrag)
	}
	s.linkHeaders(w)
	w.WriteHeader(http.StatusNoContent)
}

// httpError writes the one-line plain-text error body every failure gets.
func httpError(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	// One line, whatever a wrapped parser error contained.
	msg = strings.Join(strings.Fields(msg), " ")
	_, _ = io.WriteString(w, msg+"\n")
}

func unavailable(w http.ResponseWriter, retryAfter, msg string) {
	w.Header().Set("Retry-After", retryAfter)
	httpError(w, http.StatusServiceUnavailable, msg)
}

// readBody enforces the content type and the size limit; on failure it has
// answered and returns false.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, wantType, what string) (string, bool) {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !strings.EqualFold(mt, wantType) {
		httpError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type must be %s, got %q", wantType, ct))
		return "", false
	}
	max := s.cfg.MaxBodyBytes
	body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("reading the %s failed: %v", what, err))
		return "", false
	}
	if int64(len(body)) > max {
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("%s larger than %d bytes", what, max))
		return "", false
	}
	return string(body), true
}

func (s *Server) handlePost(w http.ResponseWriter, r *http.Request, path string) {
	// A name no publisher could use is refused before anything keyed by
	// it (the auth hook's cache, the hub, a log line) sees it.
	if err := pathname.Check(path); err != nil {
		s.stats.reject(rejectBadOffer)
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	// Access is decided before the offer is even read, so a refused viewer
	// costs no parsing and no handshake slot.
	if !s.authorize(w, r, path) {
		return
	}
	raw, ok := s.readBody(w, r, mimeSDP, "offer")
	if !ok {
		s.stats.reject(rejectBadOffer)
		return
	}
	o, err := parseOffer(raw)
	if err != nil {
		s.stats.reject(rejectBadOffer)
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	pl, base, err := s.running()
	if err != nil {
		unavailable(w, retryAfterStarting, err.Error())
		return
	}
	// Before a handshake slot is taken: waiting for an edge's source must
	// not hold back viewers of other paths.
	if s.cfg.Demand != nil {
		if err := s.cfg.Demand(r.Context(), path); err != nil {
			s.demandError(w, r, path, err)
			return
		}
	}
	clientKey := handshakeKey(r)
	switch s.handshakes.acquire(clientKey) {
	case handshakeServerFull:
		s.stats.reject(rejectHandshakeLimit)
		unavailable(w, retryAfterHandshakes,
			fmt.Sprintf("too many WebRTC handshakes in progress (limit %d); retry in a moment", s.cfg.MaxHandshakes))
		return
	case handshakeClientFull:
		s.stats.reject(rejectHandshakeLimit)
		unavailable(w, retryAfterHandshakes,
			fmt.Sprintf("too many WebRTC handshakes in progress from your address (limit %d); retry in a moment", s.cfg.MaxHandshakesPerClient))
		return
	}
	handshakeOwned := true
	defer func() {
		if handshakeOwned {
			s.handshakes.release(clientKey)
		}
	}()

	id := newSessionID()
	reader, err := s.cfg.Source.AddReader(path, id)
	if err != nil {
		s.sourceError(w, path, err)
		return
	}

	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.HandshakeTimeout)
	defer cancel()
	// Audio is decided now, once: the path's audio at this join and the
	// offer's. Without it the answer rejects an offered audio section
	// (port 0) and the viewer plays video alone.
	withAudio := o.audio && reader.HasAudio()
	// Everything the connection's callbacks may read is set before it
	// exists.
	sess := &session{id: id, path: path, remote: r.RemoteAddr, since: time.Now(), clientKey: clientKey, reader: reader,
		log: s.log.With("path", path, "session", id, "remote", r.RemoteAddr), offer: o, offerSDP: raw}
	if _, err := sess.answer(ctx, base, pl, withAudio); err != nil {
		reader.Close()
		var bad *sdpoffer.Error
		if errors.As(err, &bad) {
			s.stats.reject(rejectBadOffer)
			httpError(w, http.StatusBadRequest, bad.Error())
			return
		}
		if errors.Is(err, errServerShutdown) {
			unavailable(w, retryAfterStarting, err.Error())
			return
		}
		s.log.Warn("cannot answer a WHEP offer", "path", path, "remote", r.RemoteAddr, "err", err)
		httpError(w, http.StatusInternalServerError, "cannot answer the offer: "+err.Error())
		return
	}
	if !s.addSession(sess) {
		sess.cancel(errServerShutdown)
		sess.tr.Close()
		reader.Close()
		unavailable(w, retryAfterStarting, errServerShutdown.Error())
		return
	}
	handshakeOwned = false // runSession releases it
	s.stats.opened.Add(1)
	sess.log.Info("viewer opened")
	// Read before the session runs: a PATCH may change them from then on.
	etag, answer := sess.etag, sess.answeredSDP
	go s.runSession(sess)

	h := w.Header()
	h.Set("Content-Type", mimeSDP)
	h.Set("Location", s.sessionURL(path, id))
	h.Set("ETag", etag)
	h.Set("Accept-Patch", mimeSDPFrag)
	s.linkHeaders(w)
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, answer)
}

// sessionURL is the Location of a session: relative, or absolute under
// Config.PublicURL.
func (s *Server) sessionURL(path, id string) string {
	return s.cfg.PublicURL + (&url.URL{Path: "/" + path + "/whep/" + id}).EscapedPath()
}

// demandError answers a POST whose path's source gave no stream, with the
// source's reason: it is the first thing an operator of an edge needs.
func (s *Server) demandError(w http.ResponseWriter, r *http.Request, path string, err error) {
	var timeout interface{ Timeout() bool }
	switch {
	case r.Context().Err() != nil:
		// The viewer went away while waiting; nobody reads the answer.
		unavailable(w, retryAfterStarting, "request cancelled")
		return
	case errors.As(err, &timeout) && timeout.Timeout():
		s.stats.reject(rejectNoPublisher)
		w.Header().Set("Retry-After", retryAfterHandshakes)
		httpError(w, http.StatusGatewayTimeout, fmt.Sprintf("path %q: %v", path, err))
	case errors.Is(err, hub.ErrNoPublisher):
		s.stats.reject(rejectNoPublisher)
		httpError(w, http.StatusNotFound, fmt.Sprintf("path %q: %v", path, err))
	default:
		s.stats.reject(rejectNoPublisher)
		httpError(w, http.StatusBadGateway, fmt.Sprintf("path %q: %v", path, err))
	}
}

// authorize asks the policy whether the viewer may watch path and, when
// not, answers for it. A credential failure is answered only after the
// throttle's penalty, which holds this request alone.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, path string) bool {
	if s.cfg.Authorizer == nil {
		return true
	}
	err := s.cfg.Authorizer.CheckViewer(r.Context(), auth.Viewer{Path: path, Remote: r.RemoteAddr, Token: auth.BearerToken(r.Header)})
	if err == nil {
		return true
	}
	s.stats.reject(rejectAuth)
	d := auth.AsDenied(err)
	if d == nil {
		s.log.Error("authorizing a viewer failed", "path", path, "remote", r.RemoteAddr, "err", err)
		httpError(w, http.StatusInternalServerError, "cannot check access: "+err.Error())
		return false
	}
	s.log.Warn("viewer refused", "path", path, "remote", r.RemoteAddr, "reason", d.Reason.String(), "err", d.Err, "delay", d.Delay)
	if d.Delay > 0 {
		t := time.NewTimer(d.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
	}
	w.Header().Set("Access-Control-Expose-Headers", "WWW-Authenticate")
	// The one table from a policy decision to an HTTP answer.
	switch d.Reason {
	case auth.ReasonForbidden:
		httpError(w, http.StatusForbidden, d.Msg)
	case auth.ReasonThrottled:
		w.Header().Set("Retry-After", strconv.Itoa(int(d.RetryAfter.Round(time.Second)/time.Second)+1))
		httpError(w, http.StatusTooManyRequests, d.Msg)
	default: // unauthorized, hook denied
		w.Header().Set("WWW-Authenticate", auth.Challenge(d.TokenPresented))
		httpError(w, http.StatusUnauthorized, d.Msg)
	}
	return false
}

// sourceError maps the hub's sentinels to statuses, in this one place.
func (s *Server) sourceError(w http.ResponseWriter, path string, err error) {
	switch {
	case errors.Is(err, hub.ErrNoPublisher), errors.Is(err, hub.ErrEnded):
		s.stats.reject(rejectNoPublisher)
		httpError(w, http.StatusNotFound, fmt.Sprintf("no stream is being published on path %q", path))
	case errors.Is(err, hub.ErrPathFull):
		s.stats.reject(rejectReaderCap)
		unavailable(w, retryAfterFull, fmt.Sprintf("path %q has reached its viewer limit; retry later", path))
	case errors.Is(err, hub.ErrServerFull):
		s.stats.reject(rejectServerFull)
		// The wrapped text says which limit (viewer count or CPU).
		unavailable(w, retryAfterFull, fmt.Sprintf("the server is at capacity (%v); retry later", err))
	default:
		s.log.Error("adding a reader failed", "path", path, "err", err)
		httpError(w, http.StatusInternalServerError, fmt.Sprintf("cannot read path %q: %v", path, err))
	}
}

// linkHeaders advertises ICE servers in the RFC 9725 §4.6 format.
func (s *Server) linkHeaders(w http.ResponseWriter) {
	for _, is := range s.cfg.ICEServers {
		for _, u := range is.URLs {
			v := "<" + u + `>; rel="ice-server"`
			if is.Username != "" || is.Credential != "" {
				v += "; username=" + strconv.Quote(is.Username) +
					"; credential=" + strconv.Quote(is.Credential) + `; credential-type="password"`
			}
			w.Header().Add("Link", v)
		}
	}
}

// session returns the session at path/id or answers 404.
func (s *Server) session(w http.ResponseWriter, path, id string) *session {
	sess := s.lookupSession(id)
	if sess == nil || sess.path != path {
		httpError(w, http.StatusNotFound, "no such WHEP session (closed, or never existed)")
		return nil
	}
	return sess
}

func (s *Server) handleDelete(w http.ResponseWriter, path, id string) {
	sess := s.session(w, path, id)
	if sess == nil {
		return
	}
	s.removeSession(id)
	sess.cancel(errDeleted)
	w.WriteHeader(http.StatusOK)
}
