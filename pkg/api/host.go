package api

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// hostAllowed is the DNS-rebinding check: a web page can point its own
// name at 127.0.0.1 and have the browser on this host call the API, but
// the browser then sends that name as Host. localhost and IP addresses
// (any port) cannot be rebound, since no name of the page's is involved;
// any other name must be one the operator listed.
func hostAllowed(host string, allowed []string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" {
		return true
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	for _, a := range allowed {
		if strings.EqualFold(strings.TrimSuffix(a, "."), host) {
			return true
		}
	}
	return false
}

// clip bounds what of a client's header goes into a log line or an
// answer.
func clip(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// NotServed answers every request under Prefix on a listener that is not
// the API's (the WHEP listener): 404, so that whatever forwards that
// listener (a reverse proxy, stunnel, ssh -L) never exposes the API, and a
// caller still learns where it went.
func NotServed() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "the control API is not served on this port; it has a listener of its own (api.listen, by default 127.0.0.1:9997)")
	})
}
