package whep

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // the TURN REST scheme is defined over HMAC-SHA1
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/pathname"
)

// DefaultCredentialTTL is how long a minted TURN credential is valid: the
// TURN REST draft's (draft-uberti-behave-turn-rest-00 §2.2) recommended
// 86400 s. coturn checks the expiry on every request of an allocation,
// refreshes included, so it bounds how long one viewer may stay relayed.
const DefaultCredentialTTL = 24 * time.Hour

// hasCredentials reports whether is hands out a secret: a static
// username/password or one minted from AuthSecret.
func (is ICEServer) hasCredentials() bool {
	return is.AuthSecret != "" || is.Username != "" || is.Credential != ""
}

// TURNCredential mints the time-limited credential of the TURN REST scheme
// (coturn's use-auth-secret with static-auth-secret=secret): the username
// is "EXPIRY:ID", EXPIRY in Unix seconds, and the password is
// base64(HMAC-SHA1(secret, username)), which the TURN server recomputes
// with the secret it shares with us, so nothing is stored per viewer.
func TURNCredential(secret string, expires time.Time, id string) (username, password string) {
	username = strconv.FormatInt(expires.Unix(), 10) + ":" + id
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write([]byte(username))
	return username, base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// turnUserID names one minted credential in the TURN server's logs. It is
// random rather than the session id, which is a capability (it PATCHes
// and DELETEs the session) and must not reach another service's logs.
func turnUserID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24)
	return hex.EncodeToString(b[:])
}

// linkHeaders advertises ICE servers in the RFC 9725 §4.6 format. Servers
// with credentials are included only when withCredentials (the client
// passed viewer auth for the path); a server with an AuthSecret gets a
// credential minted for this response.
func (s *Server) linkHeaders(w http.ResponseWriter, withCredentials bool) {
	var id string
	for _, is := range s.cfg.ICEServers {
		if is.hasCredentials() && !withCredentials {
			continue
		}
		user, cred := is.Username, is.Credential
		if is.AuthSecret != "" {
			if id == "" {
				id = turnUserID()
			}
			ttl := is.CredentialTTL
			if ttl <= 0 {
				ttl = DefaultCredentialTTL
			}
			user, cred = TURNCredential(is.AuthSecret, time.Now().Add(ttl), id)
		}
		for _, u := range is.URLs {
			v := "<" + u + `>; rel="ice-server"`
			if user != "" || cred != "" {
				v += "; username=" + quoteLinkParam(user) +
					"; credential=" + quoteLinkParam(cred) + `; credential-type="password"`
			}
			w.Header().Add("Link", v)
		}
	}
}

// quoteLinkParam writes an RFC 8288 quoted-string. strconv.Quote would
// escape non-ASCII as \u sequences, which RFC 9110 quoted-pair does not
// know; a static credential may hold any printable character.
func quoteLinkParam(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// optionsMayGetCredentials decides whether an OPTIONS request is shown the
// ICE servers with credentials (handleOptions).
func (s *Server) optionsMayGetCredentials(r *http.Request, path string) bool {
	if r.Header.Get("Access-Control-Request-Method") != "" || !s.credentialedICE() || pathname.Check(path) != nil {
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

func (s *Server) credentialedICE() bool {
	for _, is := range s.cfg.ICEServers {
		if is.hasCredentials() {
			return true
		}
	}
	return false
}
