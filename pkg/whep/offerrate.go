package whep

import (
	"math"
	"sync"
	"time"
)

// Defaults of the per-client offer bucket. A player posts once and then
// again only after a failure, so 5 a second sustained is far above any
// one viewer; the burst of 20 lets a page start a wall of players, or an
// office behind one NAT press play together, without a 429.
const (
	DefaultOfferRate  = 5
	DefaultOfferBurst = 20
	// maxOfferClients bounds the bucket table. An entry is a few dozen
	// bytes, so even full the table is small; a client that has been
	// quiet long enough to refill its bucket has nothing worth keeping.
	maxOfferClients = 4096
)

// offerBuckets is one token bucket per client (per /64 for IPv6): a POST
// takes a token, and tokens come back at rate per second up to burst. It
// stands in front of all offer work, so a flood from one address costs a
// map lookup per request and keeps no one else out.
type offerBuckets struct {
	rate  float64 // tokens per second
	burst float64
	max   int
	now   func() time.Time // time.Now; tests step it

	mu      sync.Mutex
	clients map[string]*offerBucket
}

type offerBucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

func newOfferBuckets(rate, burst, max int) *offerBuckets {
	return &offerBuckets{rate: float64(rate), burst: float64(burst), max: max, now: time.Now,
		clients: make(map[string]*offerBucket)}
}

// take takes a token for key; when there is none it returns how long
// until there is one.
func (b *offerBuckets) take(key string) (ok bool, wait time.Duration) {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.clients[key]
	if c == nil {
		if len(b.clients) >= b.max {
			b.makeRoom(now)
		}
		c = &offerBucket{tokens: b.burst, at: now}
		b.clients[key] = c
	} else if d := now.Sub(c.at); d > 0 {
		c.tokens = math.Min(b.burst, c.tokens+d.Seconds()*b.rate)
		c.at = now
	}
	if c.tokens >= 1 {
		c.tokens--
		return true, 0
	}
	return false, time.Duration((1 - c.tokens) / b.rate * float64(time.Second))
}

// makeRoom drops the entries whose buckets have refilled (their clients
// went quiet: a new entry would be the same), or else the one least
// recently seen. Evicting an active client hands it a fresh burst, which
// is the price of a bounded table when more than max addresses post at
// once; the pending table's caps still bound what those offers cost.
func (b *offerBuckets) makeRoom(now time.Time) {
	b.expireLocked(now)
	if len(b.clients) < b.max {
		return
	}
	var oldest string
	var oldestAt time.Time
	for k, c := range b.clients {
		if oldest == "" || c.at.Before(oldestAt) {
			oldest, oldestAt = k, c.at
		}
	}
	delete(b.clients, oldest)
}

// expire drops the entries whose buckets have refilled; the server's Run
// calls it now and then, so a table an address scan filled empties again
// without waiting for the next newcomer.
func (b *offerBuckets) expire() {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expireLocked(now)
}

func (b *offerBuckets) expireLocked(now time.Time) {
	full := time.Duration(b.burst / b.rate * float64(time.Second))
	for k, c := range b.clients {
		if now.Sub(c.at) >= full {
			delete(b.clients, k)
		}
	}
}

func (b *offerBuckets) size() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.clients)
}

// retryAfter is a Retry-After value for wait: whole seconds, rounded up,
// at least 1.
func retryAfter(wait time.Duration) int {
	return max(1, int(math.Ceil(wait.Seconds())))
}
