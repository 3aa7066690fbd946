package whep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/srtwhep/srtwhep/pkg/admission"
	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/pathname"
	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

// denial is a refused POST: its slug (answers) and the detail that says
// what this request got wrong and how to fix it. A denial without a slug
// was answered by the step itself.
type denial struct{ slug, detail string }

// offerPost is one POST on its way to a session; the steps of handlePost
// fill it in, and whatever it holds when a step refuses is given back.
type offerPost struct {
	name      string // the path as requested
	path      string // the path once its name was checked: "" in the log before
	clientKey string
	raw       string // the offer as read
	model     *sdpoffer.Offer
	plane     Plane
	base      context.Context
	held      *admission.Offer // its pending slot, once taken
	id        string
	reader    Reader
	offer     *sdpoffer.Offer // model fitted to the path's stream
	sess      *session
}

// handlePost turns an offer into a session, or refuses it at the first
// check it fails, in this order: the cheap checks before the costly ones,
// and none that takes a slot before those that cost nothing.
func (s *Server) handlePost(w http.ResponseWriter, r *http.Request, path string) {
	p := &offerPost{name: path, clientKey: handshakeKey(r)}
	for _, step := range []func(http.ResponseWriter, *http.Request, *offerPost) *denial{
		// First of all, so a flood from one address costs a map lookup
		// per POST and nothing else: no auth hook, no parsing, no slot.
		s.checkOfferRate,
		// A name no publisher could use is refused before anything keyed
		// by it (the auth hook's cache, the hub, a log line) sees it.
		checkPathName,
		// Access is decided before the offer is even read, so a refused
		// viewer costs no parsing and no handshake slot.
		s.authorize,
		s.readOffer,
		s.checkRunning,
		// Before a slot is taken: waiting for an edge's source must not
		// hold back viewers of other paths.
		s.demand,
		// An answered offer costs a reader and a connection waiting for a
		// check, nothing more, until its viewer starts ICE
		// (awaitConnected); the reader's seat under the caps (claimReader)
		// and the DTLS slot are taken only then.
		s.takePendingSlot,
		s.addReader,
		s.answerOffer,
	} {
		if d := step(w, r, p); d != nil {
			s.giveBack(p)
			if d.slug != "" {
				s.refuse(w, r, p.path, d.slug, d.detail, p.raw)
			}
			return
		}
	}
	s.created(w, p)
}

// giveBack releases what a refused POST holds.
func (s *Server) giveBack(p *offerPost) {
	if p.reader != nil {
		p.reader.Close()
	}
	if p.held != nil {
		p.held.Release()
	}
}

func (s *Server) checkOfferRate(w http.ResponseWriter, _ *http.Request, p *offerPost) *denial {
	ok, wait := s.admission.Offers.Take(p.clientKey)
	if ok {
		return nil
	}
	w.Header().Set("Retry-After", strconv.Itoa(admission.RetryAfter(wait)))
	return &denial{probOfferRate, fmt.Sprintf("too many offers from your address (%d a second, bursts of %d); retry after the Retry-After seconds", s.cfg.Limits.OfferRate, s.cfg.Limits.OfferBurst)}
}

func checkPathName(_ http.ResponseWriter, _ *http.Request, p *offerPost) *denial {
	if err := pathname.Check(p.name); err != nil {
		return &denial{probBadPath, err.Error()}
	}
	p.path = p.name
	return nil
}

// readOffer reads the body and parses the offer.
func (s *Server) readOffer(_ http.ResponseWriter, r *http.Request, p *offerPost) *denial {
	raw, d := s.readBody(r, mimeSDP, "offer")
	if d != nil {
		return d
	}
	if slug, detail := checkSDP(raw); slug != "" {
		return &denial{slug, detail}
	}
	p.raw = raw
	model, err := sdpoffer.Parse(raw)
	if err != nil {
		return &denial{badOfferSlug(raw), err.Error()}
	}
	p.model = model
	return nil
}

func (s *Server) checkRunning(_ http.ResponseWriter, _ *http.Request, p *offerPost) *denial {
	pl, base, err := s.running()
	if err != nil {
		return &denial{probUnavailable, err.Error()}
	}
	p.plane, p.base = pl, base
	return nil
}

// demand asks an edge's source for the path (Config.Demand) and answers
// with the source's reason when it gives no stream: it is the first thing
// an operator of an edge needs. An edge keeps answering 404 when its
// origin has no such stream (not the 409 of a local path without a
// publisher): the viewer is told what the origin said, and the edge's own
// state has nothing to wait for.
func (s *Server) demand(w http.ResponseWriter, r *http.Request, p *offerPost) *denial {
	if s.cfg.Demand == nil {
		return nil
	}
	err := s.cfg.Demand(r.Context(), p.path)
	if err == nil {
		return nil
	}
	var timeout interface{ Timeout() bool }
	var unavailable interface{ Unavailable() bool }
	detail := fmt.Sprintf("path %q: %v", p.path, err)
	switch {
	case r.Context().Err() != nil:
		// The viewer went away while waiting; nobody reads the answer.
		httpError(w, r, probUnavailable, "request cancelled")
		return &denial{}
	case errors.As(err, &unavailable) && unavailable.Unavailable():
		// The edge runs as many pulls as it may: load, not a missing
		// stream, so it is retried later and counted as no publisher.
		s.stats.reject(rejectNoPublisher)
		w.Header().Set("Retry-After", retryAfterFull)
		return &denial{probUnavailable, detail}
	case errors.As(err, &timeout) && timeout.Timeout():
		return &denial{probSourceTimeout, detail}
	case errors.Is(err, hub.ErrNoPublisher):
		return &denial{probSourceRefused, detail}
	}
	return &denial{probSourceFailed, detail}
}

func (s *Server) takePendingSlot(_ http.ResponseWriter, _ *http.Request, p *offerPost) *denial {
	held, err := s.admission.TakeOffer(p.clientKey)
	if err != nil {
		return &denial{probHandshakes, err.Error()}
	}
	p.held = held
	return nil
}

// addReader reserves the viewer's reader on the path and picks the offer
// answered for the path's stream, which only now is known (an edge's
// after Demand).
func (s *Server) addReader(_ http.ResponseWriter, _ *http.Request, p *offerPost) *denial {
	p.id = newSessionID()
	reader, err := s.cfg.Source.AddReader(p.path, p.id)
	p.reader = reader
	if d := s.streamProblem(p.path, err); d != nil {
		return d
	}
	if err != nil {
		return s.sourceError(p.path, err)
	}
	o, err := p.model.ForStream(reader.Info())
	if err != nil {
		p.reader = nil // transcodedReader closes it
		p.reader, o, err = s.transcodedReader(p.path, p.id, p.model, reader, err)
		if atReaderCap(err) {
			return s.sourceError(p.path, err)
		}
	}
	if err != nil {
		return &denial{probVideoCodec, err.Error()}
	}
	p.offer = o
	return nil
}

// badOfferSlug tells a browser without H.264 (Firefox without its
// OpenH264 plugin offers VP8 and VP9 only) apart from other offer faults,
// so a player can say what to do instead of retrying. It reads the offer
// itself rather than the parser's wording.
func badOfferSlug(raw string) string {
	if !sdpoffer.OffersH264(raw) && strings.Contains(raw, "m=video") {
		return probNoH264
	}
	return probBadOffer
}

// sourceError maps the hub's sentinels to refusals, in this one place. A
// path without a publisher is 409 + Retry-After (draft-ietf-wish-whep-03):
// the endpoint exists and the same POST succeeds once a publisher comes,
// which a 404 ("wrong URL") does not say.
func (s *Server) sourceError(path string, err error) *denial {
	switch {
	case errors.Is(err, hub.ErrNoPublisher), errors.Is(err, hub.ErrEnded):
		return &denial{probNoPublisher, fmt.Sprintf("no stream is being published on path %q; start the publisher (SRT streamid publish:%s) and retry", path, path)}
	case errors.Is(err, hub.ErrPathFull):
		return &denial{probPathFull, fmt.Sprintf("path %q has reached its viewer limit; retry later", path)}
	case errors.Is(err, hub.ErrServerFull):
		// The wrapped text says which limit (viewer count or CPU).
		return &denial{probServerFull, fmt.Sprintf("the server is at capacity (%v); retry later", err)}
	}
	s.log.Error("adding a reader failed", "path", path, "err", err)
	return &denial{probInternal, fmt.Sprintf("cannot read path %q: %v", path, err)}
}

// answerOffer makes the session's connection and registers the session.
func (s *Server) answerOffer(_ http.ResponseWriter, r *http.Request, p *offerPost) *denial {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.HandshakeTimeout)
	defer cancel()
	// Everything the connection's callbacks may read is set before it
	// exists.
	sess := &session{id: p.id, path: p.path, remote: r.RemoteAddr, since: time.Now(), clientKey: p.clientKey, held: p.held, reader: p.reader,
		log: s.log.With("path", p.path, "session", p.id, "remote", r.RemoteAddr), offer: p.offer}
	// Audio is decided now, once: the path's audio at this join and the
	// offer's. Without it the answer rejects an offered audio section
	// (port 0) and the viewer plays video alone.
	withAudio := p.offer.AudioSection() != nil && p.reader.HasAudio()
	if _, err := sess.answer(ctx, p.base, p.plane, withAudio); err != nil {
		var bad *sdpoffer.Error
		switch {
		case errors.As(err, &bad):
			return &denial{badOfferSlug(p.raw), bad.Error()}
		case errors.Is(err, errServerShutdown):
			return &denial{probUnavailable, err.Error()}
		}
		s.log.Warn("cannot answer a WHEP offer", "path", p.path, "remote", r.RemoteAddr, "err", err)
		return &denial{probInternal, "cannot answer the offer: " + err.Error()}
	}
	if !s.addSession(sess) {
		sess.cancel(errServerShutdown)
		sess.tr.Close()
		return &denial{probUnavailable, errServerShutdown.Error()}
	}
	p.sess = sess
	return nil
}

// created starts the session, which owns the pending slot and the reader
// from now on, and sends the 201.
func (s *Server) created(w http.ResponseWriter, p *offerPost) {
	sess := p.sess
	// "viewer opened" is logged once its ICE starts (awaitConnected): an
	// offer nobody connects costs no line of its own.
	s.stats.opened.Add(1)
	// Read before the session runs: a PATCH may change them from then on.
	etag, answer := sess.etag, sess.answeredSDP
	if s.cfg.SenderSource != nil {
		sess.src = s.cfg.SenderSource(Viewer{Path: sess.path, ID: sess.id, Reader: sess.reader,
			VideoMedia: p.offer.Video, Log: sess.log})
	}
	go s.runSession(sess)

	h := w.Header()
	h.Set("Content-Type", mimeSDP)
	h.Set("Location", SessionURL(s.cfg.PublicURL, p.path, sess.id, ""))
	h.Set("ETag", etag)
	h.Set("Accept-Patch", mimeSDPFrag)
	s.linkHeaders(w, true) // authorize passed
	for _, ext := range s.cfg.Extensions {
		h.Add("Link", ext.Link(p.path, sess.id))
	}
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, answer)
}

// authorize asks the policy whether the viewer may watch the path. A
// credential failure is answered only after the throttle's penalty, which
// holds this request alone.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, p *offerPost) *denial {
	if s.cfg.Authorizer == nil {
		return nil
	}
	err := s.cfg.Authorizer.CheckViewer(r.Context(), auth.Viewer{Path: p.path, Remote: r.RemoteAddr, Token: auth.BearerToken(r.Header)})
	if err == nil {
		return nil
	}
	d := auth.AsDenied(err)
	if d == nil {
		s.stats.reject(rejectAuth) // refused all the same
		s.log.Error("authorizing a viewer failed", "path", p.path, "remote", r.RemoteAddr, "err", err)
		return &denial{probInternal, "cannot check access: " + err.Error()}
	}
	d.Wait(r.Context())
	w.Header().Set("Access-Control-Expose-Headers", "WWW-Authenticate")
	// The one table from a policy decision to an HTTP answer.
	switch d.Reason {
	case auth.ReasonForbidden:
		return &denial{probForbidden, d.Msg}
	case auth.ReasonThrottled:
		w.Header().Set("Retry-After", strconv.Itoa(int(d.RetryAfter.Round(time.Second)/time.Second)+1))
		return &denial{probThrottled, d.Msg}
	}
	// Unauthorized, hook denied. The log names the cause (the hook's
	// answer, such as a redirect it must not send); the viewer is told
	// only what to send.
	w.Header().Set("WWW-Authenticate", auth.Challenge(d.TokenPresented))
	s.stats.reject(rejectAuth)
	s.refusals.Refused(r, p.path, http.StatusUnauthorized, probUnauthorized, d.Error(), "")
	httpError(w, r, probUnauthorized, d.Msg)
	return &denial{}
}
