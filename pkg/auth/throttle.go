package auth

import (
	"container/list"
	"net/netip"
	"sync"
	"time"
)

// ThrottleConfig configures a Throttle; zero values take the defaults.
type ThrottleConfig struct {
	// Base is the penalty after the first failure; it doubles with each
	// further one up to Max. Defaults 100 ms and 1 s.
	Base, Max time.Duration
	// Forget drops a key's failures after this long without a new one.
	// Default 1 min.
	Forget time.Duration
	// MaxEntries bounds the keys remembered, so a flood from many
	// addresses costs bounded memory. Default 10000.
	MaxEntries int
	// LockAfter failures in a row lock a key out for LockFor after the
	// last one: a guesser who accepts a 1 s penalty per try would
	// otherwise still get 86,400 tries a day per address. Defaults 5 and
	// 1 min.
	LockAfter int
	LockFor   time.Duration
}

// Throttle slows repeated failures per key (a client address). It holds no
// goroutine and never sleeps: callers that can afford to wait (an HTTP
// handler) hold their answer for the penalty Fail returns; callers that
// cannot (the SRT handshake on a libsrt thread) refuse early while
// Remaining is positive. Either way one client's penalty blocks nobody else.
type Throttle struct {
	cfg ThrottleConfig
	now func() time.Time // replaced by tests

	mu sync.Mutex
	m  map[string]*list.Element // of *failures, in order
	// order holds the keys by their last failure, stalest first: a full
	// table evicts its front in O(1). It runs on libsrt's handshake
	// thread, where a scan of 10,000 entries per new address under the
	// lock stalled every SRT handshake of the port during a flood.
	order list.List
}

type failures struct {
	key   string
	n     int
	last  time.Time
	until time.Time
}

// NewThrottle returns an empty throttle.
func NewThrottle(cfg ThrottleConfig) *Throttle {
	if cfg.Base <= 0 {
		cfg.Base = 100 * time.Millisecond
	}
	if cfg.Max <= 0 {
		cfg.Max = time.Second
	}
	if cfg.Forget <= 0 {
		cfg.Forget = time.Minute
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = 10000
	}
	if cfg.LockAfter <= 0 {
		cfg.LockAfter = 5
	}
	if cfg.LockFor <= 0 {
		cfg.LockFor = time.Minute
	}
	return &Throttle{cfg: cfg, now: time.Now, m: map[string]*list.Element{}}
}

// Key is the throttle key of an address: the address itself for IPv4, its
// /64 for IPv6, since one IPv6 client usually owns a whole /64 and could
// otherwise rotate addresses to escape the penalty.
func Key(ip netip.Addr) string {
	if ip.Is6() && !ip.Is4In6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.Unmap().String()
}

// Fail records a failure of key and returns the penalty now in force:
// Base × 2^(failures-1), at most Max.
func (t *Throttle) Fail(key string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	e, ok := t.m[key]
	if ok {
		t.order.MoveToBack(e)
	} else {
		t.makeRoom()
		e = t.order.PushBack(&failures{key: key})
		t.m[key] = e
	}
	f := e.Value.(*failures)
	if ok && now.Sub(f.last) > t.cfg.Forget {
		f.n = 0
	}
	f.n++
	f.last = now
	d := t.cfg.Max
	if f.n <= 30 { // past 2^30 the shift would overflow; Max applies anyway
		d = min(t.cfg.Base<<(f.n-1), t.cfg.Max)
	}
	f.until = now.Add(d)
	return d
}

// Remaining is how much of key's penalty is left; 0 when none.
func (t *Throttle) Remaining(key string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[key]
	if !ok {
		return 0
	}
	return max(e.Value.(*failures).until.Sub(t.now()), 0)
}

// Locked is how much longer key stays locked out after LockAfter failures
// in a row; 0 when it is not. Its attempts meanwhile are refused without
// being checked, so they neither count nor extend the lock.
func (t *Throttle) Locked(key string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[key]
	if !ok {
		return 0
	}
	f := e.Value.(*failures)
	if f.n < t.cfg.LockAfter {
		return 0
	}
	return max(f.last.Add(t.cfg.LockFor).Sub(t.now()), 0)
}

// Succeed forgets key's failures: a client that got it right is not slowed
// for its earlier typos.
func (t *Throttle) Succeed(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.m[key]; ok {
		t.order.Remove(e)
		delete(t.m, key)
	}
}

// Len is the number of keys remembered.
func (t *Throttle) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// makeRoom keeps the map under MaxEntries by evicting the key whose last
// failure is the oldest: a forgotten one if there is any (the front is
// the stalest), else, under a flood from more addresses than that, the
// stalest still remembered.
func (t *Throttle) makeRoom() {
	for len(t.m) >= t.cfg.MaxEntries {
		e := t.order.Front()
		t.order.Remove(e)
		delete(t.m, e.Value.(*failures).key)
	}
}
