package auth

import (
	"context"
	"net/http"
	"net/netip"
)

// Client is who sent an HTTP request, as the listener established it once
// per request: the address the policy judges, and whether the request came
// through a proxy.
type Client struct {
	// Addr is the client's address: the TCP peer, or, when the peer is a
	// trusted proxy, the address its forwarding headers name.
	Addr netip.Addr
	// Forwarded is set when the request carries forwarding headers, from a
	// trusted proxy or not. Such a request may come from anywhere, so it
	// never counts as coming from this host, whatever Addr says: a proxy on
	// loopback would otherwise open the loopback-only API to the world.
	Forwarded bool
}

type clientKey struct{}

// WithClient returns ctx carrying c, for ClientOf.
func WithClient(ctx context.Context, c Client) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

// ClientOf returns the Client the listener attached to r. A request that
// did not pass through it (another listener, a test) gets the peer address
// and, to stay on the safe side, Forwarded whenever it carries a forwarding
// header.
func ClientOf(r *http.Request) Client {
	if c, ok := r.Context().Value(clientKey{}).(Client); ok {
		return c
	}
	return Client{Addr: AddrOf(r.RemoteAddr), Forwarded: HasForwardingHeader(r.Header)}
}

// forwardingHeaders are the headers proxies add. X-Real-IP and the
// X-Forwarded-Host/Proto pair are never used for the address, but their
// presence still marks a request as proxied: nginx setups often send only
// X-Real-IP, and Caddy always sends X-Forwarded-Proto.
var forwardingHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Real-Ip", "X-Forwarded-Host", "X-Forwarded-Proto"}

// HasForwardingHeader reports whether h carries any header a reverse proxy
// adds.
func HasForwardingHeader(h http.Header) bool {
	for _, name := range forwardingHeaders {
		if _, ok := h[name]; ok {
			return true
		}
	}
	return false
}
