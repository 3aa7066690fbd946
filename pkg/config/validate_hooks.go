package config

import "net/url"

// maxHookQueue bounds hooks.queueSize: events older than a million others
// are of no use to a control plane, and the queue must not hold memory
// without bound while the receiver is down.
const maxHookQueue = 1_000_000

func (v *validator) hooks() {
	h := v.c.Hooks
	if h.URL != "" {
		u, err := url.Parse(h.URL)
		switch {
		case err != nil:
			v.fail("hooks.url", "%q is not a URL; write e.g. http://127.0.0.1:9000/events, or \"\" to send no events", h.URL)
		case u.Scheme != "http" && u.Scheme != "https":
			v.fail("hooks.url", "scheme %q is not http or https; write e.g. http://127.0.0.1:9000/events", u.Scheme)
		case u.Host == "":
			v.fail("hooks.url", "%q has no host; write e.g. http://127.0.0.1:9000/events", u.Redacted())
		}
	}
	v.positive("hooks.timeout", h.Timeout, "2s")
	if h.QueueSize < 1 || h.QueueSize > maxHookQueue {
		v.fail("hooks.queueSize", "%d is outside 1 to %d; use e.g. 1024 (events waiting for the receiver; more are dropped)", h.QueueSize, maxHookQueue)
	}
}
