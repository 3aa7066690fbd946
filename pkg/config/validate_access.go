package config

import (
	"net/url"
	"strings"
)

// access checks the control API token and the external auth hook.
func (v *validator) access() {
	v.token("api.token", v.c.API.Token, true)
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
