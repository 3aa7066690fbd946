package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"unicode/utf8"
)

// MinTokenLength is the shortest token (api.token, readTokens,
// publishPass) accepted: a shorter one falls to guessing within the
// failure throttle's limits from a few thousand addresses.
const MinTokenLength = 16

// tokenFix says how to make a token that passes.
const tokenFix = "use at least 16 characters, e.g. the output of `openssl rand -hex 16`"

// access checks the control API token and the external auth hook.
func (v *validator) access() {
	v.token("api.token", v.c.API.Token, true)
	v.api()
	h := v.c.AuthHook
	if h.URL != "" {
		u, err := url.Parse(h.URL)
		switch {
		case err != nil:
			v.fail("authHook.url", "%q is not a URL; write e.g. http://127.0.0.1:9000/auth, or \"\" to disable the hook", h.URL)
		case u.Scheme != "http" && u.Scheme != "https":
			v.fail("authHook.url", "scheme %q is not http or https; write e.g. http://127.0.0.1:9000/auth", u.Scheme)
		case u.Host == "":
			v.fail("authHook.url", "%q has no host; write e.g. http://127.0.0.1:9000/auth", h.URL)
		}
	}
	v.positive("authHook.timeout", h.Timeout, "2s")
	if h.CacheTTL < 0 {
		v.fail("authHook.cacheTTL", "%s is negative; use 0 to ask the hook every time, or e.g. 10s", h.CacheTTL)
	}
}

// token checks a Bearer token: it travels in an Authorization header, so it
// cannot hold spaces or control characters.
func (v *validator) token(key, s string, emptyOK bool) {
	switch {
	case s == "" && !emptyOK:
		v.fail(key, "is empty, which no viewer can send; write a token such as a long random string, or remove the entry")
	case strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		v.fail(key, "contains a space or control character, which cannot go in an Authorization: Bearer header; remove it")
	case s != "" && utf8.RuneCountInString(s) < MinTokenLength:
		v.fail(key, "is %d characters long, short enough to guess; %s", utf8.RuneCountInString(s), tokenFix)
	}
}

// takeover checks an overridePublisher set in Go (YAML only decodes the
// three values).
func (v *validator) takeover(key string, t Takeover) {
	switch t {
	case TakeoverEntitled, TakeoverAny, TakeoverNever:
	default:
		v.fail(key, "%q is not a takeover rule; %s", string(t), takeoverFix)
	}
}

// api checks where the control API listens: off loopback it would answer
// whoever reaches the port, which only a token makes safe.
func (v *validator) api() {
	a := v.c.API
	v.listen("api.listen", a.Listen, "127.0.0.1:9997", true)
	if a.Listen != "" && a.Token == "" {
		if host, _, err := net.SplitHostPort(a.Listen); err == nil && !loopbackHost(host) {
			v.fail("api.listen", "%q is not a loopback address and api.token is empty, so anyone who reaches the port could list and end sessions; "+
				"listen on 127.0.0.1:9997, or set api.token (%s)", a.Listen, tokenFix)
		}
	}
	for i, h := range a.AllowedHosts {
		key := fmt.Sprintf("api.allowedHosts[%d]", i)
		switch {
		case h == "":
			v.fail(key, "is empty; write a host name such as srtwhep.example.com, or remove the entry")
		case strings.ContainsAny(h, ":/@ \t"):
			v.fail(key, "%q is not a bare host name; write the name alone (srtwhep.example.com), without scheme or port: any port is allowed", h)
		}
	}
}

// loopbackHost reports whether a listen host binds loopback only ("" and
// 0.0.0.0 bind every address).
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}
