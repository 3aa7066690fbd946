package main

import (
	"crypto/subtle"
	"net/netip"
)

// credentialsMatch compares in constant time so a publisher cannot learn a
// configured password byte by byte from response timing.
func credentialsMatch(user, pass, wantUser, wantPass string) bool {
	u := subtle.ConstantTimeCompare([]byte(user), []byte(wantUser))
	p := subtle.ConstantTimeCompare([]byte(pass), []byte(wantPass))
	return u&p == 1
}

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
