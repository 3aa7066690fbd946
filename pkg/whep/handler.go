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

	"github.com/srtwhep/srtwhep/pkg/admission"
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
	// A publisher may (re)connect any moment; the player's own back-off
	// stretches the wait while none does.
	retryAfterNoPublisher = "1"

	// preflightMaxAge lets a browser cache a preflight for a day (its own
	// cap may be lower): a player that reconnects in a loop otherwise pays
	// an OPTIONS round trip before every POST and DELETE.
	preflightMaxAge = "86400"
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
				s.handleOptions(w, r, path[1:], true)
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
					s.handleDelete(w, r, path, id)
					return
				case http.MethodOptions:
					s.cors(w)
					s.handleOptions(w, r, path, false)
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

// handleOptions answers preflights and the OPTIONS a WHEP client sends to
// learn the ICE servers (RFC 9725 §4.6). Servers with credentials are
// listed only on the endpoint, only for a request that is not a CORS
// preflight (a preflight carries no Authorization, and a browser shows its
// headers to no script), and only when the client passes viewer auth for
// the path, as the POST would.
func (s *Server) handleOptions(w http.ResponseWriter, r *http.Request, path string, endpoint bool) {
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "OPTIONS, POST, PATCH, DELETE")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, If-Match")
	h.Set("Access-Control-Max-Age", preflightMaxAge)
	if endpoint {
		h.Set("Accept-Post", mimeSDP)
	} else {
		h.Set("Accept-Patch", mimeSDPFrag)
	}
	s.linkHeaders(w, endpoint && s.optionsMayGetCredentials(r, path))
	w.WriteHeader(http.StatusNoContent)
}

// refuse answers a POST that gets no session and logs it, rate-limited
// (refusalLog). offer is the body as read, "" before it was.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, path string, code int, slug, detail, offer string) {
	s.refusals.refused(r, path, code, slug, detail, offer)
	httpError(w, r, code, slug, detail)
}

// bodyError is a request body refused by readBody.
type bodyError struct {
	code         int
	slug, detail string
}

// readBody enforces the content type and the size limit.
func (s *Server) readBody(r *http.Request, wantType, what string) (string, *bodyError) {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !strings.EqualFold(mt, wantType) {
		return "", &bodyError{http.StatusUnsupportedMediaType, probUnsupportedType,
			fmt.Sprintf("Content-Type must be %s, got %q; send the %s with that Content-Type", wantType, ct, what)}
	}
	max := s.cfg.MaxBodyBytes
	body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		return "", &bodyError{http.StatusBadRequest, probUnreadable, fmt.Sprintf("reading the %s failed: %v", what, err)}
	}
	if int64(len(body)) > max {
		return "", &bodyError{http.StatusRequestEntityTooLarge, probTooLarge,
			fmt.Sprintf("%s larger than %d bytes; browsers send about 10 KB", what, max)}
	}
	return string(body), nil
}

// checkSDP refuses a body that cannot be an SDP offer before the parser
// sees it, with a detail that says so instead of a parser's complaint
// about its first line.
func checkSDP(raw string) (slug, detail string) {
	t := strings.TrimLeft(raw, " \t\r\n")
	switch {
	case t == "":
		return probEmptyOffer, "the request body is empty; a WHEP POST needs an SDP offer (Content-Type: application/sdp) in its body"
	case !strings.HasPrefix(t, "v="):
		return probNotSDP, "the request body is not SDP (an SDP offer starts with v=0); send the browser's offer (RTCPeerConnection.createOffer) as the body"
	}
	return "", ""
}

func (s *Server) handlePost(w http.ResponseWriter, r *http.Request, path string) {
	// First of all, so a flood from one address costs a map lookup per
	// POST and nothing else: no auth hook, no parsing, no slot.
	clientKey := handshakeKey(r)
	if ok, wait := s.offers.Take(clientKey); !ok {
		s.stats.reject(rejectOfferRate)
		w.Header().Set("Retry-After", strconv.Itoa(admission.RetryAfter(wait)))
		s.refuse(w, r, "", http.StatusTooManyRequests, probOfferRate,
			fmt.Sprintf("too many offers from your address (%d a second, bursts of %d); retry after the Retry-After seconds", s.cfg.OfferRate, s.cfg.OfferBurst), "")
		return
	}
	// A name no publisher could use is refused before anything keyed by
	// it (the auth hook's cache, the hub, a log line) sees it.
	if err := pathname.Check(path); err != nil {
		s.stats.reject(rejectBadOffer)
		s.refuse(w, r, "", http.StatusNotFound, probBadPath, err.Error(), "")
		return
	}
	// Access is decided before the offer is even read, so a refused viewer
	// costs no parsing and no handshake slot.
	if !s.authorize(w, r, path) {
		return
	}
	raw, berr := s.readBody(r, mimeSDP, "offer")
	if berr != nil {
		s.stats.reject(rejectBadOffer)
		s.refuse(w, r, path, berr.code, berr.slug, berr.detail, "")
		return
	}
	if slug, detail := checkSDP(raw); slug != "" {
		s.stats.reject(rejectBadOffer)
		s.refuse(w, r, path, http.StatusBadRequest, slug, detail, "")
		return
	}
	model, err := parseOffer(raw)
	if err != nil {
		s.stats.reject(rejectBadOffer)
		s.refuse(w, r, path, http.StatusBadRequest, badOfferSlug(raw), err.Error(), raw)
		return
	}
	pl, base, err := s.running()
	if err != nil {
		w.Header().Set("Retry-After", retryAfterStarting)
		s.refuse(w, r, path, http.StatusServiceUnavailable, probUnavailable, err.Error(), raw)
		return
	}
	// Before a handshake slot is taken: waiting for an edge's source must
	// not hold back viewers of other paths.
	if s.cfg.Demand != nil {
		if err := s.cfg.Demand(r.Context(), path); err != nil {
			s.demandError(w, r, path, err, raw)
			return
		}
	}
	// An answered offer costs a reader and a connection waiting for a
	// check, nothing more, until its viewer starts ICE (awaitConnected);
	// the reader's seat under the caps (claimReader) and the DTLS slot
	// are taken only then.
	switch s.pending.Acquire(clientKey) {
	case admission.SlotsFull:
		s.stats.reject(rejectPendingLimit)
		w.Header().Set("Retry-After", retryAfterHandshakes)
		s.refuse(w, r, path, http.StatusServiceUnavailable, probHandshakes,
			fmt.Sprintf("too many WebRTC offers waiting for ICE to start (limit %d); retry in a moment", s.cfg.MaxPendingOffers), raw)
		return
	case admission.ClientSlotsFull:
		s.stats.reject(rejectPendingLimit)
		w.Header().Set("Retry-After", retryAfterHandshakes)
		s.refuse(w, r, path, http.StatusServiceUnavailable, probHandshakes,
			fmt.Sprintf("too many WebRTC offers from your address waiting for ICE to start (limit %d); start ICE on the ones you have, or retry in a moment", s.pending.PerClient()), raw)
		return
	}
	pendingOwned := true
	defer func() {
		if pendingOwned {
			s.pending.Release(clientKey)
		}
	}()

	id := newSessionID()
	reader, err := s.cfg.Source.AddReader(path, id)
	if s.streamProblem(w, r, path, err, raw) {
		if err == nil {
			reader.Close()
		}
		return
	}
	if err != nil {
		s.sourceError(w, r, path, err, raw)
		return
	}
	// Only now is the path's stream known (an edge's after Demand).
	o, err := offerFor(model, reader.Info())
	if err != nil {
		reader, o, err = s.transcodedReader(path, id, model, reader, err)
		if atReaderCap(err) {
			s.sourceError(w, r, path, err, raw)
			return
		}
	}
	if err != nil {
		s.stats.reject(rejectBadOffer)
		s.refuse(w, r, path, http.StatusConflict, probVideoCodec, err.Error(), raw)
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
			s.refuse(w, r, path, http.StatusBadRequest, badOfferSlug(raw), bad.Error(), raw)
			return
		}
		if errors.Is(err, errServerShutdown) {
			w.Header().Set("Retry-After", retryAfterStarting)
			s.refuse(w, r, path, http.StatusServiceUnavailable, probUnavailable, err.Error(), raw)
			return
		}
		s.log.Warn("cannot answer a WHEP offer", "path", path, "remote", r.RemoteAddr, "err", err)
		s.refuse(w, r, path, http.StatusInternalServerError, probInternal, "cannot answer the offer: "+err.Error(), raw)
		return
	}
	if !s.addSession(sess) {
		sess.cancel(errServerShutdown)
		sess.tr.Close()
		reader.Close()
		w.Header().Set("Retry-After", retryAfterStarting)
		s.refuse(w, r, path, http.StatusServiceUnavailable, probUnavailable, errServerShutdown.Error(), raw)
		return
	}
	pendingOwned = false // runSession releases it
	// "viewer opened" is logged once its ICE starts (awaitConnected): an
	// offer nobody connects costs no line of its own.
	s.stats.opened.Add(1)
	// Read before the session runs: a PATCH may change them from then on.
	etag, answer := sess.etag, sess.answeredSDP
	go s.runSession(sess)

	h := w.Header()
	h.Set("Content-Type", mimeSDP)
	h.Set("Location", s.sessionURL(path, id))
	h.Set("ETag", etag)
	h.Set("Accept-Patch", mimeSDPFrag)
	s.linkHeaders(w, true) // authorize passed
	if s.cfg.Extension != nil {
		h.Add("Link", s.cfg.Extension.Link(path, id))
	}
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
// An edge keeps answering 404 when its origin has no such stream (not the
// 409 of a local path without a publisher): the viewer is told what the
// origin said, and the edge's own state has nothing to wait for.
func (s *Server) demandError(w http.ResponseWriter, r *http.Request, path string, err error, raw string) {
	var timeout interface{ Timeout() bool }
	var unavailable interface{ Unavailable() bool }
	switch {
	case r.Context().Err() != nil:
		// The viewer went away while waiting; nobody reads the answer.
		w.Header().Set("Retry-After", retryAfterStarting)
		httpError(w, r, http.StatusServiceUnavailable, probUnavailable, "request cancelled")
		return
	case errors.As(err, &unavailable) && unavailable.Unavailable():
		// The edge runs as many pulls as it may: load, not a missing stream.
		s.stats.reject(rejectNoPublisher)
		w.Header().Set("Retry-After", retryAfterFull)
		s.refuse(w, r, path, http.StatusServiceUnavailable, probUnavailable, fmt.Sprintf("path %q: %v", path, err), raw)
	case errors.As(err, &timeout) && timeout.Timeout():
		s.stats.reject(rejectNoPublisher)
		w.Header().Set("Retry-After", retryAfterHandshakes)
		s.refuse(w, r, path, http.StatusGatewayTimeout, probSourceTimeout, fmt.Sprintf("path %q: %v", path, err), raw)
	case errors.Is(err, hub.ErrNoPublisher):
		s.stats.reject(rejectNoPublisher)
		s.refuse(w, r, path, http.StatusNotFound, probSourceRefused, fmt.Sprintf("path %q: %v", path, err), raw)
	default:
		s.stats.reject(rejectNoPublisher)
		s.refuse(w, r, path, http.StatusBadGateway, probSourceFailed, fmt.Sprintf("path %q: %v", path, err), raw)
	}
}

// badOfferSlug tells a browser without H.264 (Firefox without its
// OpenH264 plugin offers VP8 and VP9 only) apart from other offer faults,
// so a player can say what to do instead of retrying. It reads the offer
// itself rather than the parser's wording.
func badOfferSlug(raw string) string {
	if !offersH264(raw) && strings.Contains(raw, "m=video") {
		return probNoH264
	}
	return probBadOffer
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
		s.refuse(w, r, path, http.StatusInternalServerError, probInternal, "cannot check access: "+err.Error(), "")
		return false
	}
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
		s.refuse(w, r, path, http.StatusForbidden, probForbidden, d.Msg, "")
	case auth.ReasonThrottled:
		w.Header().Set("Retry-After", strconv.Itoa(int(d.RetryAfter.Round(time.Second)/time.Second)+1))
		s.refuse(w, r, path, http.StatusTooManyRequests, probThrottled, d.Msg, "")
	default: // unauthorized, hook denied
		w.Header().Set("WWW-Authenticate", auth.Challenge(d.TokenPresented))
		// The log names the cause (the hook's answer, such as a redirect
		// it must not send); the viewer is told only what to send.
		s.refusals.refused(r, path, http.StatusUnauthorized, probUnauthorized, d.Error(), "")
		httpError(w, r, http.StatusUnauthorized, probUnauthorized, d.Msg)
	}
	return false
}

// sourceError maps the hub's sentinels to statuses, in this one place. A
// path without a publisher is 409 + Retry-After (draft-ietf-wish-whep-03):
// the endpoint exists and the same POST succeeds once a publisher comes,
// which a 404 ("wrong URL") does not say.
func (s *Server) sourceError(w http.ResponseWriter, r *http.Request, path string, err error, raw string) {
	switch {
	case errors.Is(err, hub.ErrNoPublisher), errors.Is(err, hub.ErrEnded):
		s.stats.reject(rejectNoPublisher)
		w.Header().Set("Retry-After", retryAfterNoPublisher)
		s.refuse(w, r, path, http.StatusConflict, probNoPublisher,
			fmt.Sprintf("no stream is being published on path %q; start the publisher (SRT streamid publish:%s) and retry", path, path), raw)
	case errors.Is(err, hub.ErrPathFull):
		s.stats.reject(rejectReaderCap)
		w.Header().Set("Retry-After", retryAfterFull)
		s.refuse(w, r, path, http.StatusServiceUnavailable, probPathFull, fmt.Sprintf("path %q has reached its viewer limit; retry later", path), raw)
	case errors.Is(err, hub.ErrServerFull):
		s.stats.reject(rejectServerFull)
		// The wrapped text says which limit (viewer count or CPU).
		w.Header().Set("Retry-After", retryAfterFull)
		s.refuse(w, r, path, http.StatusServiceUnavailable, probServerFull, fmt.Sprintf("the server is at capacity (%v); retry later", err), raw)
	default:
		s.log.Error("adding a reader failed", "path", path, "err", err)
		s.refuse(w, r, path, http.StatusInternalServerError, probInternal, fmt.Sprintf("cannot read path %q: %v", path, err), raw)
	}
}

// session returns the session at path/id or answers 404.
func (s *Server) session(w http.ResponseWriter, r *http.Request, path, id string) *session {
	sess := s.lookupSession(id)
	if sess == nil || sess.path != path {
		httpError(w, r, http.StatusNotFound, probNoSession,
			"no such WHEP session (closed, or never existed); POST a new offer to the endpoint to start one")
		return nil
	}
	return sess
}

// handleDelete ends a session. Teardown is idempotent within endedWindow
// (endedSessions): a session that already ended answers 200 as well.
func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request, path, id string) {
	if sess := s.lookupSession(id); (sess == nil || sess.path != path) && s.ended.ended(id, path) {
		w.WriteHeader(http.StatusOK)
		return
	}
	sess := s.session(w, r, path, id)
	if sess == nil {
		return
	}
	s.removeSession(id)
	s.ended.add(id, path)
	sess.cancel(errDeleted)
	w.WriteHeader(http.StatusOK)
}
