// Package pathname is the one rule for what may name a path, shared by
// every edge that takes a name from outside (the SRT streamid, the WHEP
// URL, the control API). A name that passes is short and plain enough to
// be a URL segment, a log value and a metric label; one that does not is
// refused before it reaches any table. pkg/config refuses the same names
// at load time, so no path is configured that nobody could reach.
package pathname

import (
	"errors"
	"fmt"
	"strings"
)

// MaxLen bounds a path name in bytes. Real names are a few segments of a
// few words ("live/cam1", "events/2026/keynote"); anything near the cap is
// a probe, and the cap keeps each metric series, log line and error
// message small.
const MaxLen = 128

// ErrInvalid is wrapped by every error Check returns.
var ErrInvalid = errors.New("invalid path name")

// Check returns nil for a usable path name: at most MaxLen bytes of
// slash-separated segments of letters, digits and - _ . ~, with no empty,
// "." or ".." segment. Its errors quote at most a clipped name.
func Check(name string) error {
	if p := Problem(name); p != "" {
		return fmt.Errorf("%w %s: %s", ErrInvalid, Quote(name), p)
	}
	return nil
}

// Problem says why name cannot be a path, or "" when it can.
func Problem(name string) string {
	switch {
	case name == "":
		return "it is empty"
	case len(name) > MaxLen:
		return fmt.Sprintf("it is %d bytes long, more than the %d allowed", len(name), MaxLen)
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/"):
		return "it starts or ends with '/'"
	}
	for seg := range strings.SplitSeq(name, "/") {
		switch seg {
		case "":
			return "it has an empty segment ('//')"
		case ".", "..":
			return "it has a '" + seg + "' segment"
		}
		for _, r := range seg {
			if !Rune(r) {
				return fmt.Sprintf("%q is not allowed (use letters, digits, - _ . ~ and /)", r)
			}
		}
	}
	return ""
}

// Rune reports whether r may appear in a segment.
func Rune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '.' || r == '_' || r == '~' || r == '-'
}

// Quote renders a name from outside for a message: Go-quoted, clipped to
// MaxLen bytes with "…" after the quote when it was longer, so neither a
// log line nor an error body ever carries more than the cap of it.
func Quote(name string) string {
	if len(name) > MaxLen {
		return fmt.Sprintf("%q…", clip(name, MaxLen))
	}
	return fmt.Sprintf("%q", name)
}

// clip cuts s to at most n bytes without splitting a UTF-8 sequence.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
