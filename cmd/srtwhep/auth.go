package main

import "net/netip"

// advertiseLoopback reports whether loopback candidates should be offered:
// when the media sockets listen on loopback or on every address. Browsers
// ignore them; WHEP clients on the same host (a local restreamer, the load
// generator) need them.
func advertiseLoopback(ip string) bool {
	if ip == "" {
		return true
	}
	a, err := netip.ParseAddr(ip)
	return err == nil && (a.IsLoopback() || a.IsUnspecified())
}
