package web

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/srtwhep/srtwhep/pkg/auth"
)

// maxHops bounds how far back a forwarding chain is walked; a real chain
// has a handful of proxies, and the header size is capped anyway.
const maxHops = 32

// proxies is the parsed http.trustedProxies list.
type proxies []netip.Prefix

func parseProxies(list []string) (proxies, error) {
	out := make(proxies, 0, len(list))
	for _, s := range list {
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("http.trustedProxies: %q is not an address or network", s)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("http.trustedProxies: %q is not an address or network", s)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

func (ps proxies) trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// client derives who sent r. Forwarding headers name the client only when
// the TCP peer is a trusted proxy; otherwise anyone could claim any
// address. X-Forwarded-For wins over Forwarded because every common proxy
// (Caddy, Traefik, HAProxy's forwardfor, cloud load balancers) writes it,
// while several pass a client's own Forwarded header through untouched.
func (ps proxies) client(peer netip.Addr, h http.Header) auth.Client {
	c := auth.Client{Addr: peer, Forwarded: auth.HasForwardingHeader(h)}
	if !c.Forwarded || len(ps) == 0 || !ps.trusted(peer) {
		return c
	}
	var hops []netip.Addr
	if xff := h.Values("X-Forwarded-For"); len(xff) > 0 {
		hops = forwardedForHops(xff)
	} else {
		hops = forwardedHops(h.Values("Forwarded"))
	}
	c.Addr = ps.rightmostUntrusted(peer, hops)
	return c
}

// rightmostUntrusted walks the chain from the peer towards the client and
// stops at the first hop that is not a trusted proxy: everything left of
// it was written by that untrusted hop, so it could be anything. A hop
// that names no usable address (Forwarded's "unknown", garbage) stops the
// walk at the trusted proxy that wrote it. When every hop is trusted the
// left-most one is the client.
func (ps proxies) rightmostUntrusted(peer netip.Addr, hops []netip.Addr) netip.Addr {
	client := peer
	for i := len(hops) - 1; i >= 0 && i >= len(hops)-maxHops; i-- {
		a := hops[i]
		if !a.IsValid() {
			return client
		}
		client = a
		if !ps.trusted(a) {
			return a
		}
	}
	return client
}

// forwardedForHops reads X-Forwarded-For, left (client) to right (last
// proxy), over all of its header lines. Entries that are not addresses
// become the zero Addr so that they still occupy their place in the chain.
func forwardedForHops(values []string) []netip.Addr {
	var hops []netip.Addr
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			hops = append(hops, hopAddr(strings.TrimSpace(item)))
		}
	}
	return hops
}

// forwardedHops reads the for= parameter of each element of RFC 7239
// Forwarded headers, in order.
func forwardedHops(values []string) []netip.Addr {
	var hops []netip.Addr
	for _, v := range values {
		for _, elem := range splitQuoted(v, ',') {
			var node string
			found := false
			for _, pair := range splitQuoted(elem, ';') {
				name, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if ok && strings.EqualFold(strings.TrimSpace(name), "for") {
					node, found = unquote(strings.TrimSpace(val)), true
				}
			}
			if found {
				hops = append(hops, hopAddr(node))
			} else {
				// An element without for= is still a hop whose sender
				// we cannot name.
				hops = append(hops, netip.Addr{})
			}
		}
	}
	return hops
}

// hopAddr parses one node: "192.0.2.60", "192.0.2.60:4711",
// "[2001:db8::17]:4711", "2001:db8::17". "unknown", obfuscated names
// ("_hidden") and anything else give the zero Addr.
func hopAddr(s string) netip.Addr {
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return a.Unmap().WithZone("")
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		if a, err := netip.ParseAddr(host); err == nil {
			return a.Unmap().WithZone("")
		}
	}
	return netip.Addr{}
}

// splitQuoted splits s at sep outside double-quoted strings (RFC 7230
// quoted-string, with backslash escapes).
func splitQuoted(s string, sep byte) []string {
	var parts []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == sep && !quoted:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

func unquote(s string) string {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return s
	}
	s = s[1 : len(s)-1]
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// withClient derives the client once per request and hands it on: in the
// request's context for the policy (auth.ClientOf), and as RemoteAddr so
// that WHEP's address lists, the failure throttle and every log line see
// the real client rather than the proxy.
func (ps proxies) withClient(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer := auth.AddrOf(r.RemoteAddr)
		c := ps.client(peer, r.Header)
		r2 := r.WithContext(auth.WithClient(r.Context(), c))
		if c.Addr != peer {
			r2.RemoteAddr = c.Addr.String()
		}
		next.ServeHTTP(w, r2)
	})
}
