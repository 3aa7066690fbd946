package edge

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// DefaultMaxPulls bounds the pulls one edge runs at once. Each holds a
// libsrt socket with its receive buffer and threads' work, and a path's
// worth of hub state: 64 streams is about what one small VPS can carry,
// and random path names cannot make an edge dial its origin without end.
const DefaultMaxPulls = 64

// refusedFor is how long a path the source refused as not found (1404) is
// answered from memory, without a dial; refusedMax bounds how many such
// paths are remembered, so probing random names cannot grow memory.
const (
	refusedFor = 10 * time.Second
	refusedMax = 4096
)

// TooManyPullsError refuses a demand that would start a pull past the
// edge's limit. Unavailable marks it as load, not a missing stream, so
// WHEP answers 503 with Retry-After.
type TooManyPullsError struct {
	Path  string
	Limit int
}

func (e *TooManyPullsError) Error() string {
	return fmt.Sprintf("this edge already pulls %d paths from its sources (its limit); retry later", e.Limit)
}

// Unavailable reports that the refusal is temporary (load).
func (e *TooManyPullsError) Unavailable() bool { return true }

// refusedCache remembers the paths a source refused as not found.
type refusedCache struct {
	mu    sync.Mutex
	until map[string]refusal
}

type refusal struct {
	err   *Error
	until time.Time
}

// get returns the remembered refusal of path, if still fresh.
func (c *refusedCache) get(path string, now time.Time) *Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.until[path]
	if !ok {
		return nil
	}
	if now.After(r.until) {
		delete(c.until, path)
		return nil
	}
	return r.err
}

// add remembers err for path. When full, expired entries go first; if
// none has expired, the one nearest to expiry does, so the newest names
// are the ones answered from memory.
func (c *refusedCache) add(path string, err *Error, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.until == nil {
		c.until = map[string]refusal{}
	}
	if _, ok := c.until[path]; !ok && len(c.until) >= refusedMax {
		oldest, first := "", time.Time{}
		for p, r := range c.until {
			if now.After(r.until) {
				delete(c.until, p)
				continue
			}
			if oldest == "" || r.until.Before(first) {
				oldest, first = p, r.until
			}
		}
		if len(c.until) >= refusedMax {
			delete(c.until, oldest)
		}
	}
	c.until[path] = refusal{err: err, until: now.Add(refusedFor)}
}

func (c *refusedCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.until)
}

// reasonLog writes at most one line a second per reason: random path
// names would otherwise make one line each. A line after a quiet spell
// says how many were left out since the last one, with a few of their
// paths.
type reasonLog struct {
	// every is reasonEvery; tests whose back-offs take no time set it to
	// 0 to see each line.
	every   time.Duration
	mu      sync.Mutex
	reasons map[string]*reasonState
}

type reasonState struct {
	last     time.Time
	left     int
	examples []string
}

const (
	reasonEvery    = time.Second
	reasonExamples = 3
	// reasonKinds bounds the map: reasons are a few fixed phrases, but a
	// source's own error text could vary.
	reasonKinds = 64
)

// warn logs msg for path with attrs unless a line of the same reason was
// logged less than a second ago; then it only counts it.
func (l *reasonLog) warn(log *slog.Logger, reason, msg, path string, attrs ...any) {
	now := time.Now()
	l.mu.Lock()
	if l.reasons == nil || len(l.reasons) >= reasonKinds {
		l.reasons = map[string]*reasonState{}
	}
	st := l.reasons[reason]
	if st == nil {
		st = &reasonState{}
		l.reasons[reason] = st
	}
	if !st.last.IsZero() && now.Sub(st.last) < l.every {
		st.left++
		if len(st.examples) < reasonExamples {
			st.examples = append(st.examples, path)
		}
		l.mu.Unlock()
		return
	}
	left, examples := st.left, strings.Join(st.examples, ",")
	st.last, st.left, st.examples = now, 0, st.examples[:0]
	l.mu.Unlock()
	attrs = append([]any{"path", path}, attrs...)
	if left > 0 {
		attrs = append(attrs, "suppressed", left, "suppressed_paths", examples)
	}
	log.Warn(msg, attrs...)
}
