package whep

import (
	"net/http"

	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/pathname"
	"github.com/srtwhep/srtwhep/pkg/turncred"
)

// linkHeaders advertises the ICE servers (pkg/turncred); those with
// credentials only when withCredentials (the client passed viewer auth
// for the path).
func (s *Server) linkHeaders(w http.ResponseWriter, withCredentials bool) {
	for _, v := range turncred.Links(s.cfg.ICEServers, withCredentials) {
		w.Header().Add("Link", v)
	}
}

// optionsMayGetCredentials decides whether an OPTIONS request is shown the
// ICE servers with credentials (handleOptions).
func (s *Server) optionsMayGetCredentials(r *http.Request, path string) bool {
	if r.Header.Get("Access-Control-Request-Method") != "" || !turncred.AnyCredentials(s.cfg.ICEServers) || pathname.Check(path) != nil {
		return false
	}
	if s.cfg.Authorizer == nil {
		return true
	}
	token := auth.BearerToken(r.Header)
	// A page without a token yet is not a failed guess: asking the policy
	// would count one against its address before its POST does.
	if token == "" && s.cfg.Authorizer.ViewerAuthRequired(path) {
		return false
	}
	// A wrong token counts as a failure like on POST, so OPTIONS is no
	// free oracle; its penalty delay is not served here, the answer is the
	// same 204 either way.
	return s.cfg.Authorizer.CheckViewer(r.Context(), auth.Viewer{Path: path, Remote: r.RemoteAddr, Token: token}) == nil
}
