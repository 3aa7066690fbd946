// Package auth holds the building blocks of srtwhep's access control:
// address allow lists, constant-time secret comparison, Bearer tokens, the
// external HTTP hook with its answer cache, and the throttle that slows
// repeated failures. It knows nothing of the config file or of SRT and
// WHEP; cmd/srtwhep combines the blocks per request from the live config.
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// AddrOf extracts the IP address of a "host:port" remote (or a bare
// address); IPv4-mapped IPv6 addresses are unmapped so that 10.0.0.0/8 also
// matches ::ffff:10.1.2.3. The zero Addr means it could not be parsed.
func AddrOf(remote string) netip.Addr {
	host := remote
	if h, _, err := net.SplitHostPort(remote); err == nil {
		host = h
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap().WithZone("")
}

// IPAllowed reports whether ip is in the allow list, whose entries are
// addresses ("203.0.113.7") or networks ("10.0.0.0/8"). An empty list allows
// every address; an invalid address is never allowed by a non-empty list,
// and an entry that does not parse matches nothing (the config validator
// refuses such entries before they get here).
func IPAllowed(allow []string, ip netip.Addr) bool {
	if len(allow) == 0 {
		return true
	}
	if !ip.IsValid() {
		return false
	}
	for _, s := range allow {
		if strings.Contains(s, "/") {
			if p, err := netip.ParsePrefix(s); err == nil && p.Contains(ip) {
				return true
			}
			continue
		}
		if a, err := netip.ParseAddr(s); err == nil && a.Unmap() == ip {
			return true
		}
	}
	return false
}

// Equal compares two secrets in constant time. Both are hashed first so
// that the time does not even reveal the length of the configured secret.
func Equal(got, want string) bool {
	g := sha256.Sum256([]byte(got))
	w := sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// CredentialsMatch compares a user/password pair; both halves are always
// compared so the answer takes as long for a wrong user as a wrong password.
func CredentialsMatch(user, pass, wantUser, wantPass string) bool {
	u := Equal(user, wantUser)
	p := Equal(pass, wantPass)
	return u && p
}

// TokenValid reports whether tok is one of tokens. Every configured token is
// compared, whatever matched, so the time does not tell which one was close.
// An empty tok is never valid.
func TokenValid(tokens []string, tok string) bool {
	if tok == "" {
		return false
	}
	ok := false
	for _, t := range tokens {
		if Equal(tok, t) {
			ok = true
		}
	}
	return ok
}

// BearerToken returns the token of an "Authorization: Bearer TOKEN" header,
// or "" when there is none. The scheme is case-insensitive (RFC 9110 §11.1).
func BearerToken(h http.Header) string {
	v := h.Get("Authorization")
	scheme, tok, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// Challenge is the WWW-Authenticate value sent with every 401. When a token
// was presented, RFC 6750 §3.1 asks to say it was the token that failed.
func Challenge(presented bool) string {
	if presented {
		return `Bearer realm="srtwhep", error="invalid_token"`
	}
	return `Bearer realm="srtwhep"`
}
