// Package lograte keeps a flood of one kind of log line to one line per
// interval without hiding other kinds: the first event of a kind is
// written at once, the rest of its interval are counted and written as
// one summary. A refusal loop, a damaged link or a scan would otherwise
// write a line per packet or request, drown the lines that matter and
// fill the disk.
//
// The package writes nothing itself: Note tells the caller when to write
// its line and how many events it stands for, and the summary function
// given to New writes the lines of events held back. So every caller
// keeps its own message text and keys.
package lograte

import (
	"sync"
	"time"
)

// Limiter counts events per kind K and carries, per kind, a value T of
// the events held back (the latest one's, unless Merge says otherwise)
// for their summary. It is safe for concurrent use. It starts no
// goroutine: held events are summarised by the next Note of any kind
// once they are due, by Flush and by Close, and, when After is set, by a
// timer that Close stops.
type Limiter[K comparable, T any] struct {
	every    time.Duration
	maxKinds int
	summary  func(kind K, held int, latest T)

	// Now is the clock; tests step it. Set before first use.
	Now func() time.Time
	// Merge folds a held-back event's value v into the kind's value so
	// far; nil keeps the latest. It runs under the Limiter's lock.
	Merge func(sofar, v T) T
	// After, when set (time.AfterFunc outside tests), schedules the
	// summaries, so a flood that stops is reported when its interval
	// ends even if nothing else is logged and nobody calls Flush.
	After func(d time.Duration, f func()) Stopper

	mu      sync.Mutex
	kinds   map[K]*kind[T]
	nextDue time.Time // the earliest due summary; zero when none is held
	timer   Stopper   // pending After, nil when none
	closed  bool
}

// Stopper is what After returns; *time.Timer is one.
type Stopper interface{ Stop() bool }

type kind[T any] struct {
	last   time.Time // of the kind's last line, event or summary
	held   int
	latest T
}

// New limits each kind to one line per every. At most maxKinds kinds are
// kept (kinds quiet for an interval are forgotten first); past that, new
// kinds share one entry whose summaries name the zero K, so a stranger
// sending ever-new kinds cannot grow memory and still gets one line per
// interval. summary writes the line for held events of a kind: held
// counts them, latest is their value. With a nil summary nothing is
// summarised on its own: the held events of a kind are carried into the
// count Note returns for its next event after the interval, for callers
// that hand the count to someone else to log.
func New[K comparable, T any](every time.Duration, maxKinds int, summary func(kind K, held int, latest T)) *Limiter[K, T] {
	return &Limiter[K, T]{every: every, maxKinds: max(maxKinds, 1), summary: summary, Now: time.Now,
		kinds: make(map[K]*kind[T])}
}

// Note counts one event of kind with value v. It returns how many events
// a line written now stands for: this one and those of its kind held
// back since the kind's last line, not summarised yet. 0 means the
// caller writes nothing: the event is held for the kind's summary.
func (l *Limiter[K, T]) Note(kind K, v T) int {
	l.mu.Lock()
	now := l.Now()
	var due []summaryLine[K, T]
	if l.summary != nil && !l.nextDue.IsZero() && !now.Before(l.nextDue) {
		due = l.collectLocked(now, false, &kind)
	}
	k := l.entryLocked(kind, now)
	n := 0
	if k.last.IsZero() || now.Sub(k.last) >= l.every {
		n = k.held + 1
		var zero T
		k.last, k.held, k.latest = now, 0, zero
	} else {
		switch {
		case l.Merge == nil:
			k.latest = v
		case k.held == 0:
			var zero T
			k.latest = l.Merge(zero, v)
		default:
			k.latest = l.Merge(k.latest, v)
		}
		k.held++
		if d := k.last.Add(l.every); l.nextDue.IsZero() || d.Before(l.nextDue) {
			l.nextDue = d
		}
		l.armLocked(now)
	}
	l.mu.Unlock()
	l.write(due)
	return n
}

// Reset starts kind's interval now with nothing held: its caller wrote a
// line for the kind that stands for everything so far (a refusal of a new
// kind in its own words, say), so the next summary counts from here.
func (l *Limiter[K, T]) Reset(kind K) {
	l.mu.Lock()
	now := l.Now()
	k := l.entryLocked(kind, now)
	var zero T
	k.last, k.held, k.latest = now, 0, zero
	l.mu.Unlock()
}

// Flush writes the summaries that are due, and forgets kinds quiet for
// an interval (without a summary function, it only forgets). A caller
// without After calls it now and then (its own ticker) when a flood's
// last summary must not wait for the next event.
func (l *Limiter[K, T]) Flush() {
	if l.summary == nil {
		l.mu.Lock()
		l.pruneLocked(l.Now())
		l.mu.Unlock()
		return
	}
	l.mu.Lock()
	due := l.collectLocked(l.Now(), false, nil)
	l.mu.Unlock()
	l.write(due)
}

// Close stops the timer and writes every summary held, due or not. The
// Limiter stays usable, without a timer.
func (l *Limiter[K, T]) Close() {
	l.mu.Lock()
	l.closed = true
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	var due []summaryLine[K, T]
	if l.summary != nil {
		due = l.collectLocked(l.Now(), true, nil)
	}
	l.mu.Unlock()
	l.write(due)
}

type summaryLine[K comparable, T any] struct {
	kind   K
	held   int
	latest T
}

func (l *Limiter[K, T]) write(lines []summaryLine[K, T]) {
	for _, s := range lines {
		l.summary(s.kind, s.held, s.latest)
	}
}

// entryLocked finds kind's entry, making one (or taking the shared one)
// when it has none.
func (l *Limiter[K, T]) entryLocked(key K, now time.Time) *kind[T] {
	if k := l.kinds[key]; k != nil {
		return k
	}
	var overflow K
	if len(l.kinds) >= l.maxKinds-1 { // one entry is kept for the zero K
		l.pruneLocked(now)
		if len(l.kinds) >= l.maxKinds-1 {
			key = overflow
			if k := l.kinds[key]; k != nil {
				return k
			}
		}
	}
	k := &kind[T]{}
	l.kinds[key] = k
	return k
}

// pruneLocked forgets kinds with nothing held whose interval has ended:
// their next event is written at once either way.
func (l *Limiter[K, T]) pruneLocked(now time.Time) {
	for key, k := range l.kinds {
		if k.held == 0 && now.Sub(k.last) >= l.every {
			delete(l.kinds, key)
		}
	}
}

// collectLocked takes the summaries due at now (all held ones with
// final), except skip's, which the Note under way writes itself; it
// recomputes nextDue and re-arms the timer for what is still held.
func (l *Limiter[K, T]) collectLocked(now time.Time, final bool, skip *K) []summaryLine[K, T] {
	var out []summaryLine[K, T]
	l.nextDue = time.Time{}
	for key, k := range l.kinds {
		switch {
		case k.held == 0:
			if now.Sub(k.last) >= l.every {
				delete(l.kinds, key)
			}
			continue
		case skip != nil && key == *skip:
		case final || now.Sub(k.last) >= l.every:
			out = append(out, summaryLine[K, T]{key, k.held, k.latest})
			var zero T
			k.last, k.held, k.latest = now, 0, zero
			continue
		}
		if d := k.last.Add(l.every); l.nextDue.IsZero() || d.Before(l.nextDue) {
			l.nextDue = d
		}
	}
	l.armLocked(now)
	return out
}

// armLocked schedules the next summary when After is set and none is
// scheduled.
func (l *Limiter[K, T]) armLocked(now time.Time) {
	if l.After == nil || l.summary == nil || l.closed || l.timer != nil || l.nextDue.IsZero() {
		return
	}
	l.timer = l.After(max(l.nextDue.Sub(now), 0), l.fire)
}

func (l *Limiter[K, T]) fire() {
	l.mu.Lock()
	l.timer = nil
	l.mu.Unlock()
	l.Flush()
}
