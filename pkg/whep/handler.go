package whep

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/srtwhep/srtwhep/pkg/httpcors"
)

const (
	mimeSDP     = "application/sdp"
	mimeSDPFrag = "application/trickle-ice-sdpfrag"
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
				httpcors.Allow(w.Header(), s.cfg.AllowOrigin)
				s.handlePost(w, r, path[1:])
				return
			case http.MethodOptions:
				httpcors.Allow(w.Header(), s.cfg.AllowOrigin)
				s.handleOptions(w, r, path[1:], true)
				return
			}
		}
		if path, id, sub, ok := SplitSessionURL(p); ok && sub == "" {
			switch r.Method {
			case http.MethodPatch:
				httpcors.Allow(w.Header(), s.cfg.AllowOrigin)
				s.handlePatch(w, r, path, id)
				return
			case http.MethodDelete:
				httpcors.Allow(w.Header(), s.cfg.AllowOrigin)
				s.handleDelete(w, r, path, id)
				return
			case http.MethodOptions:
				httpcors.Allow(w.Header(), s.cfg.AllowOrigin)
				s.handleOptions(w, r, path, false)
				return
			}
		}
		fallback.ServeHTTP(w, r)
	})
}

// SessionURL is the URL of session id on path (sub ""), its Location, or
// of what an extension serves under it (sub "/sse", "/layer"): relative,
// or absolute under publicURL (Config.PublicURL).
func SessionURL(publicURL, path, id, sub string) string {
	return publicURL + (&url.URL{Path: "/" + path + "/whep/" + id + sub}).EscapedPath()
}

// SplitSessionURL is SessionURL's inverse on a request's URL path:
// /{path}/whep/{id}{sub}, sub "" for the session itself or "/" and what
// follows it. False when p is no session's URL nor under one.
func SplitSessionURL(p string) (path, id, sub string, ok bool) {
	i := strings.LastIndex(p, "/whep/")
	if i <= 0 {
		return "", "", "", false
	}
	path, rest := p[1:i], p[i+len("/whep/"):]
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		id, sub = rest[:j], rest[j:]
	} else {
		id = rest
	}
	return path, id, sub, id != ""
}

// handleOptions answers preflights and the OPTIONS a WHEP client sends to
// learn the ICE servers (RFC 9725 §4.6). Servers with credentials are
// listed only on the endpoint, only for a request that is not a CORS
// preflight (a preflight carries no Authorization, and a browser shows its
// headers to no script), and only when the client passes viewer auth for
// the path, as the POST would.
func (s *Server) handleOptions(w http.ResponseWriter, r *http.Request, path string, endpoint bool) {
	h := w.Header()
	httpcors.Preflight(h, "OPTIONS, POST, PATCH, DELETE", "Authorization, Content-Type, If-Match")
	if endpoint {
		h.Set("Accept-Post", mimeSDP)
	} else {
		h.Set("Accept-Patch", mimeSDPFrag)
	}
	s.linkHeaders(w, endpoint && s.optionsMayGetCredentials(r, path))
	w.WriteHeader(http.StatusNoContent)
}

// readBody enforces the content type and the size limit.
func (s *Server) readBody(r *http.Request, wantType, what string) (string, *denial) {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !strings.EqualFold(mt, wantType) {
		return "", &denial{probUnsupportedType,
			fmt.Sprintf("Content-Type must be %s, got %q; send the %s with that Content-Type", wantType, ct, what)}
	}
	max := s.cfg.MaxBodyBytes
	body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		return "", &denial{probUnreadable, fmt.Sprintf("reading the %s failed: %v", what, err)}
	}
	if int64(len(body)) > max {
		return "", &denial{probTooLarge,
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

// session returns the session at path/id or answers 404.
func (s *Server) session(w http.ResponseWriter, r *http.Request, path, id string) *session {
	sess := s.lookupSession(id)
	if sess == nil || sess.path != path {
		httpError(w, r, probNoSession,
			"no such WHEP session (closed, or never existed); POST a new offer to the endpoint to start one")
		return nil
	}
	return sess
}

// A DELETE may race the session's own end (the publisher left, ICE
// failed) or be retried by a client whose first DELETE's answer was lost;
// either way the session is gone as the client wants, so it gets 200, not
// a 404 that reads like a wrong URL. The ids of sessions ended within
// endedWindow are kept for that (Server.ended), at most endedMax of them.
const (
	endedWindow = time.Minute
	endedMax    = 4096
)

// handleDelete ends a session. Teardown is idempotent within endedWindow:
// a session that already ended answers 200 as well.
func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request, path, id string) {
	if sess := s.lookupSession(id); (sess == nil || sess.path != path) && s.ended.Has(id, path) {
		w.WriteHeader(http.StatusOK)
		return
	}
	sess := s.session(w, r, path, id)
	if sess == nil {
		return
	}
	s.removeSession(id)
	s.ended.Add(id, path)
	sess.cancel(errDeleted)
	w.WriteHeader(http.StatusOK)
}
