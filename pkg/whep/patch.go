package whep

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

// handlePatch applies trickled candidates (204) or performs an ICE restart
// (200 with our new credentials), per RFC 9725 §4.3.
func (s *Server) handlePatch(w http.ResponseWriter, r *http.Request, path, id string) {
	sess := s.session(w, r, path, id)
	if sess == nil {
		return
	}
	w.Header().Set("Accept-Patch", mimeSDPFrag)
	body, berr := s.readBody(r, mimeSDPFrag, "sdpfrag")
	if berr != nil {
		httpError(w, r, berr.slug, berr.detail)
		return
	}
	frag, err := sdpoffer.ParseFrag(body)
	if errors.Is(err, sdpoffer.ErrEmptyFrag) {
		httpError(w, r, probEmptyFrag, "empty sdpfrag; send a=candidate lines, or a new a=ice-ufrag and a=ice-pwd for an ICE restart")
		return
	}
	if err != nil {
		httpError(w, r, probBadFrag, "malformed sdpfrag: "+err.Error())
		return
	}

	sess.sigMu.Lock()
	defer sess.sigMu.Unlock()
	ifMatch := r.Header.Get("If-Match")
	if ifMatch != "" && !etagMatches(ifMatch, sess.etag) {
		httpError(w, r, probETagMismatch, "If-Match does not match the session's current ETag "+sess.etag+"; send that ETag, or * to restart regardless")
		return
	}
	if frag.Ufrag == "" || frag.Ufrag == sess.offer.VideoSection().ICE.Ufrag {
		if err := sess.tr.Trickle(frag.Candidates); err != nil {
			httpError(w, r, probBadFrag, err.Error())
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}

	// A new ufrag: ICE restart.
	if ifMatch == "" {
		httpError(w, r, probIfMatchNeeded, "an ICE restart needs If-Match with the session's ETag or *")
		return
	}
	if frag.Pwd == "" {
		httpError(w, r, probBadFrag, "ICE restart fragment has a=ice-ufrag but no a=ice-pwd; send both")
		return
	}
	answer, err := sess.restartICE(frag)
	if err != nil {
		var bad *sdpoffer.Error
		if errors.As(err, &bad) {
			httpError(w, r, probBadFrag, bad.Error())
			return
		}
		// The connection is in an unknown state now: end the session so
		// the viewer starts over with a fresh POST.
		sess.cancel(fmt.Errorf("ICE restart failed: %w", err))
		httpError(w, r, probRestartFailed, "ICE restart failed: "+err.Error()+"; the session is closed, POST a new offer")
		return
	}
	sess.log.Info("ICE restart")
	h := w.Header()
	h.Set("Content-Type", mimeSDPFrag)
	h.Set("ETag", sess.etag)
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, answer)
}

// etagMatches implements If-Match (RFC 9110 §13.1.1): "*" or a list of
// entity tags; weak tags never match.
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// restartICE starts a new ICE generation on the connection for the
// viewer's new credentials and returns the answer fragment; the DTLS and
// SRTP state survive. Caller holds sigMu.
func (sess *session) restartICE(frag sdpoffer.Frag) (string, error) {
	li, err := sess.tr.RestartICE(plane.ICE{Ufrag: frag.Ufrag, Pwd: frag.Pwd, Candidates: frag.Candidates})
	if err != nil {
		return "", err
	}
	sess.offer = sess.offer.WithICE(frag.Ufrag, frag.Pwd)
	sess.etag = quoteETag(li.Ufrag)
	ours := sdpoffer.Frag{Ufrag: li.Ufrag, Pwd: li.Pwd, Candidates: li.Candidates, End: true}
	return ours.Video(sess.offer.Sent().PT, sess.offer.VideoSection().Mid), nil
}
