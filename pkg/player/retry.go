package player

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// The built-in player's retry policy (whep.js), for Go clients that should
// behave as the page does: the crowd test in internal/hostile applies it
// to its pion viewers. TestRetryPolicyMatchesPage runs the page's own
// functions under node and keeps these equal to them.
const (
	// RetryJitter stretches each wait after a refusal that says when to
	// come back by up to this share of it, at random, so a crowd refused
	// together does not come back together.
	RetryJitter = 0.5
	// RetryMaxTries is how many such refusals in a row the page takes
	// before it stops asking by itself (a click asks again).
	RetryMaxTries = 30
	// BackoffMax caps the back-off between failed attempts.
	BackoffMax = 10 * time.Second
	// ConnectTimeout is how long an answered attempt may take to connect
	// before the page drops it and tries again after the back-off.
	ConnectTimeout = 15 * time.Second
)

// Backoff is the wait after failures failed attempts: 1 s, 2 s, 4 s, 8 s,
// then BackoffMax.
func Backoff(failures int) time.Duration {
	return min(time.Second<<min(failures, 10), BackoffMax)
}

// RetryDelay is the wait after the tries-th refusal in a row (from 1) that
// says when to come back (429, 503 and other server errors), and false once
// the page would stop asking: after is the server's Retry-After (0 without
// one: then the back-off for failures so far), stretched by RetryJitter
// times rand (in [0, 1)). Whole milliseconds, as the page rounds them.
func RetryDelay(after time.Duration, tries, failures int, rand float64) (time.Duration, bool) {
	if tries >= RetryMaxTries {
		return 0, false
	}
	base := after
	if base <= 0 {
		base = Backoff(failures)
	}
	ms := math.Round(float64(base.Milliseconds()) * (1 + RetryJitter*rand))
	return time.Duration(ms) * time.Millisecond, true
}

// RetryAfter reads a Retry-After value in seconds as the page does: at
// least 1 s, at most 10 min; 0 when there is none or it is not a number of
// seconds (an HTTP date is left to the page: the server sends seconds).
func RetryAfter(value string) time.Duration {
	v := strings.TrimSpace(value)
	if v == "" || strings.TrimLeft(v, "0123456789") != "" {
		return 0
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		n = 600 // all digits, too many of them
	}
	return time.Duration(min(max(n, 1), 600)) * time.Second
}
