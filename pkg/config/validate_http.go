package config

import (
	"fmt"
	"net/netip"
	"strings"
)

func (v *validator) http() {
	h := v.c.HTTP
	v.listen("http.listen", h.Listen, ":8889", false)
	if strings.ContainsFunc(h.AllowOrigin, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		v.fail("http.allowOrigin", "contains a control character, which cannot go in an HTTP header; write an origin such as https://example.org or *")
	}
	if h.MaxBodyBytes < 1024 {
		v.fail("http.maxBodyBytes", "%d is too small for an SDP offer (browsers send 3 to 10 KB); use at least 1024, e.g. 65536", h.MaxBodyBytes)
	}
	v.atLeastOne("http.maxHandshakes", h.MaxHandshakes, "WHEP handshake", "32")
	v.atLeastOne("http.maxHandshakesPerClient", h.MaxHandshakesPerClient, "WHEP handshake", "16")
	v.atLeastOne("http.offerRate", h.OfferRate, "WHEP offer from any client (offers a second)", "5")
	v.atLeastOne("http.offerBurst", h.OfferBurst, "WHEP offer from any client", "20")
	v.atLeastOne("http.maxPendingOffers", h.MaxPendingOffers, "answered WHEP offer", "512")
	v.positive("http.idleTimeout", h.IdleTimeout, "15s")
	v.positive("http.bodyTimeout", h.BodyTimeout, "5s")
	if h.MaxConns < 1 {
		v.fail("http.maxConns", "%d allows no connection at all; use 1 or more, e.g. 4096 (keep it below the open-file limit, ulimit -n)", h.MaxConns)
	}
	if h.MaxConnsPerClient < 1 {
		v.fail("http.maxConnsPerClient", "%d allows no connection at all; use 1 or more, e.g. 128", h.MaxConnsPerClient)
	}
	v.ipList("http.trustedProxies", h.TrustedProxies)
	for i, s := range h.TrustedProxies {
		if p, err := netip.ParsePrefix(s); err == nil && p.Bits() == 0 {
			v.fail(fmt.Sprintf("http.trustedProxies[%d]", i), "%q trusts every address, so any client could claim to be any other; list only your reverse proxy's address, e.g. 127.0.0.1 or 10.0.0.0/8", s)
		}
	}
	v.tls(h.TLS)
	v.publicURL(h.PublicURL)
	v.absURL("http.reconnectURL", h.ReconnectURL, "write the entry point viewers should move to (a load balancer), e.g. https://live.example.com")
	if h.DrainTimeout < 0 {
		v.fail("http.drainTimeout", "%s is negative; use 0 (end the sessions at once) or a duration such as 5s", h.DrainTimeout)
	}
	v.atLeastOne("http.maxEventStreams", h.MaxEventStreams, "WHEP event stream", "1024")
	v.listen("metrics.listen", v.c.Metrics.Listen, "127.0.0.1:9998", true)
}

// atLeastOne refuses a cap below 1, which would allow no what at all.
func (v *validator) atLeastOne(key string, n int, what, example string) {
	if n < 1 {
		v.fail(key, "%d allows no %s at all; use 1 or more, e.g. %s", n, what, example)
	}
}

func (v *validator) tls(t TLS) {
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		v.fail("http.tls.certFile", "is set but keyFile is empty; set both (PEM files) or neither")
	case t.CertFile == "" && t.KeyFile != "":
		v.fail("http.tls.keyFile", "is set but certFile is empty; set both (PEM files) or neither")
	}
	if t.Domain == "" {
		return
	}
	if t.CertFile != "" || t.KeyFile != "" {
		v.fail("http.tls.domain", "is set together with certFile/keyFile; use either your own certificate files or an automatic certificate for domain, not both")
	}
	if problem := domainProblem(t.Domain); problem != "" {
		v.fail("http.tls.domain", "%q %s; write the DNS name browsers use for this host, e.g. stream.example.org", t.Domain, problem)
	}
	if strings.TrimSpace(t.CacheDir) == "" {
		v.fail("http.tls.cacheDir", "is empty while domain is set; certificates must survive restarts (Let's Encrypt limits new ones per week), so name a writable directory, e.g. /var/lib/srtwhep/acme")
	}
	if t.Email != "" && (!strings.Contains(t.Email, "@") || strings.ContainsFunc(t.Email, func(r rune) bool { return r <= ' ' || r == 0x7f })) {
		v.fail("http.tls.email", "%q is not an e-mail address; write e.g. ops@example.org, or \"\" for none", t.Email)
	}
}

// domainProblem says why s cannot get a certificate through ACME's
// TLS-ALPN-01 challenge, or "" when it can.
func domainProblem(s string) string {
	switch {
	case strings.Contains(s, "://"):
		return "is a URL"
	case strings.HasPrefix(s, "*."):
		return "is a wildcard, which needs the DNS-01 challenge this server does not do"
	case strings.Contains(s, ":"):
		if _, err := netip.ParseAddr(s); err == nil {
			return "is an IP address, which gets no certificate this way"
		}
		return "includes a port (the ACME server always checks port 443)"
	case len(s) > 253:
		return "is longer than a DNS name may be"
	}
	if _, err := netip.ParseAddr(s); err == nil {
		return "is an IP address, which gets no certificate this way"
	}
	labels := strings.Split(strings.TrimSuffix(s, "."), ".")
	if len(labels) < 2 {
		return "is not a fully qualified name"
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return "has an empty, too long or dash-edged label"
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return "contains a character other than letters, digits, '-' and '.' (write an internationalised name in its xn-- form)"
			}
		}
	}
	return ""
}
