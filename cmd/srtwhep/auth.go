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

// isLoopback reports whether the WebRTC listener is bound to loopback only;
// then loopback candidates are the only ones that can work, so they are
// advertised (browsers ignore them, local pion clients use them).
func isLoopback(ip string) bool {
	a, err := netip.ParseAddr(ip)
	return err == nil && a.IsLoopback()
}
