// Package httpcors sets the CORS headers of srtwhep's WHEP endpoints and
// their extensions (pkg/whep, pkg/whepevents), so a player page on
// another origin sees the same answers from all of them.
package httpcors

import "net/http"

// PreflightMaxAge lets a browser cache a preflight for a day (its own cap
// may be lower): a player that reconnects in a loop otherwise pays an
// OPTIONS round trip before every POST and DELETE.
const PreflightMaxAge = "86400"

// Allow is set on every answer: a player page on another origin must be
// able to read Location and ETag, or it cannot PATCH or DELETE, and Link
// and Accept-Patch, or it finds neither the ICE servers nor the
// extensions. origin is the Access-Control-Allow-Origin value; any but *
// makes the answer vary by Origin for caches.
func Allow(h http.Header, origin string) {
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Expose-Headers", "Location, ETag, Link, Accept-Patch")
	if origin != "*" {
		h.Add("Vary", "Origin")
	}
}

// Preflight answers a CORS preflight's questions: the methods of the URL
// and the request headers a player may send.
func Preflight(h http.Header, methods, headers string) {
	h.Set("Access-Control-Allow-Methods", methods)
	h.Set("Access-Control-Allow-Headers", headers)
	h.Set("Access-Control-Max-Age", PreflightMaxAge)
}
