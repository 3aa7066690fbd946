// Package turncred renders the ICE servers a WHEP answer advertises (Link
// headers, RFC 9725 §4.6) and mints the time-limited TURN credentials of
// the TURN REST scheme (draft-uberti-behave-turn-rest-00) for them, so a
// TURN server that shares a secret with us (coturn's use-auth-secret)
// needs nothing stored per viewer.
package turncred

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // the TURN REST scheme is defined over HMAC-SHA1
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// DefaultTTL is how long a minted TURN credential is valid: the TURN REST
// draft's (§2.2) recommended 86400 s. coturn checks the expiry on every
// request of an allocation, refreshes included, so it bounds how long one
// viewer may stay relayed.
const DefaultTTL = 24 * time.Hour

// Server is a STUN or TURN server advertised to viewers in Link headers.
type Server struct {
	URLs       []string
	Username   string
	Credential string
	// AuthSecret, when set, is the TURN server's static-auth-secret:
	// every answer carries a credential minted from it (Mint) instead of
	// Username and Credential.
	AuthSecret string
	// CredentialTTL is how long a minted credential is valid; 0 means
	// DefaultTTL.
	CredentialTTL time.Duration
}

// HasCredentials reports whether is hands out a secret: a static
// username/password or one minted from AuthSecret.
func (is Server) HasCredentials() bool {
	return is.AuthSecret != "" || is.Username != "" || is.Credential != ""
}

// AnyCredentials reports whether some server of list has credentials.
func AnyCredentials(list []Server) bool {
	for _, is := range list {
		if is.HasCredentials() {
			return true
		}
	}
	return false
}

// Mint makes the time-limited credential of the TURN REST scheme (coturn's
// use-auth-secret with static-auth-secret=secret): the username is
// "EXPIRY:ID", EXPIRY in Unix seconds, and the password is
// base64(HMAC-SHA1(secret, username)), which the TURN server recomputes
// with the secret it shares with us.
func Mint(secret string, expires time.Time, id string) (username, password string) {
	username = strconv.FormatInt(expires.Unix(), 10) + ":" + id
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write([]byte(username))
	return username, base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// userID names one minted credential in the TURN server's logs. It is
// random rather than the WHEP session id, which is a capability (it
// PATCHes and DELETEs the session) and must not reach another service's
// logs.
func userID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24)
	return hex.EncodeToString(b[:])
}

// Links renders list as Link header values in the RFC 9725 §4.6 format.
// Servers with credentials are included only when withCredentials (the
// client passed viewer auth for the path); a server with an AuthSecret
// gets a credential minted now, one id shared by this call's servers.
func Links(list []Server, withCredentials bool) []string {
	var out []string
	var id string
	for _, is := range list {
		if is.HasCredentials() && !withCredentials {
			continue
		}
		user, cred := is.Username, is.Credential
		if is.AuthSecret != "" {
			if id == "" {
				id = userID()
			}
			ttl := is.CredentialTTL
			if ttl <= 0 {
				ttl = DefaultTTL
			}
			user, cred = Mint(is.AuthSecret, time.Now().Add(ttl), id)
		}
		for _, u := range is.URLs {
			v := "<" + u + `>; rel="ice-server"`
			if user != "" || cred != "" {
				v += "; username=" + quoteLinkParam(user) +
					"; credential=" + quoteLinkParam(cred) + `; credential-type="password"`
			}
			out = append(out, v)
		}
	}
	return out
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
