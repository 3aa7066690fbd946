// Package ctlclient builds the HTTP client srtwhep uses to call the
// control-plane services an operator points it at: the auth hook and the
// event receiver.
package ctlclient

import (
	"net/http"
	"time"
)

// New returns a client that goes to the service directly (never through
// HTTP_PROXY: a control plane sits next to the server) and never follows
// redirects. Following one would turn our POST into a body-less GET
// (RFC 9110 §15.4.3 lets clients do that for 301/302, and Go does), so a
// hook that redirects to any page answering 2xx would allow everybody, and
// an event would arrive without its body. The 3xx answer is returned as it
// is; Redirected tells the caller so it can say why it refused.
//
// maxIdle is the number of idle connections kept to the service; timeout
// bounds one request, 0 for none.
func New(maxIdle int, timeout time.Duration) (*http.Client, *http.Transport) {
	tr := &http.Transport{
		Proxy:               nil,
		MaxIdleConnsPerHost: maxIdle,
		IdleConnTimeout:     30 * time.Second,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}, tr
}

// Redirected reports whether resp is a redirect the client did not follow.
func Redirected(resp *http.Response) bool {
	return resp.StatusCode/100 == 3
}
