package admission

import (
	"container/list"
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
	// DefaultOfferClients bounds the bucket table. An entry is a few dozen
	// bytes, so even full the table is small; a client that has been
	// quiet long enough to refill its bucket has nothing worth keeping.
	DefaultOfferClients = 4096
)

// OfferBuckets is one token bucket per client (per /64 for IPv6): a POST
// takes a token, and tokens come back at rate per second up to burst. It
// stands in front of all offer work, so a flood from one address costs a
// map lookup per request and keeps no one else out.
//
// A client's bucket grows with its live viewers (Joined, Left): with L of
// them it holds burst+L tokens and refills at rate×(1+L/burst), the bucket
// of 1+L/burst clients, and still refills in burst/rate seconds. An
// address is a crowd, not one person, once its viewers connect and stay:
// a venue's NAT, docker-proxy's gateway address, a proxy missing from
// trustedProxies. Only viewers that stay count, so a client that connects
// and leaves again and again gains nothing, and what a client gains is a
// share of what it already holds: L streams and L reader slots, under the
// caps and CPU limit that bound those. Offers that never start ICE, the
// flood this bucket is for, never raise it.
type OfferBuckets struct {
	rate  float64 // tokens per second
	burst float64
	max   int
	now   func() time.Time // time.Now; tests step it

	mu      sync.Mutex
	clients map[string]*list.Element // Value: *offerBucket
	// seen holds the buckets in the order their clients were last seen,
	// the longest ago first. A take moves its bucket to the back, so the
	// refilled buckets (seen refill or more ago) are always a run at the
	// front: eviction and expiry pop from there and never scan the table,
	// which a full table would otherwise make every newcomer do.
	seen list.List
	// live counts each client's viewers that are connected now. Apart
	// from clients so that evicting a bucket keeps them; an entry lives
	// while its client has a viewer, so live sessions bound it.
	live map[string]int
}

type offerBucket struct {
	key    string
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

// NewOfferBuckets allows rate offers a second and burst at once per
// client, for at most max clients at a time.
func NewOfferBuckets(rate, burst, max int) *OfferBuckets {
	return &OfferBuckets{rate: float64(rate), burst: float64(burst), max: max, now: time.Now,
		clients: make(map[string]*list.Element), live: make(map[string]int)}
}

// Take takes a token for key; when there is none it returns how long
// until there is one.
func (b *OfferBuckets) Take(key string) (ok bool, wait time.Duration) {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	scale := 1 + float64(b.live[key])/b.burst
	rate, burst := b.rate*scale, b.burst*scale
	var c *offerBucket
	if e := b.clients[key]; e == nil {
		if len(b.clients) >= b.max {
			b.makeRoom(now)
		}
		c = &offerBucket{key: key, tokens: burst, at: now}
		b.clients[key] = b.seen.PushBack(c)
	} else {
		c = e.Value.(*offerBucket)
		if d := now.Sub(c.at); d > 0 {
			c.tokens = math.Min(burst, c.tokens+d.Seconds()*rate)
			c.at = now
		}
		b.seen.MoveToBack(e)
	}
	if c.tokens >= 1 {
		c.tokens--
		return true, 0
	}
	return false, time.Duration((1 - c.tokens) / rate * float64(time.Second))
}

// Joined counts a viewer of key that connected; the next Take refills
// key's bucket at its new size (since its last Take: a viewer that came
// meanwhile credits that whole while, one that left debits it, both
// within the bucket's bounds).
func (b *OfferBuckets) Joined(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.live[key]++
}

// Left undoes one Joined of key.
func (b *OfferBuckets) Left(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n := b.live[key] - 1; n > 0 {
		b.live[key] = n
	} else {
		delete(b.live, key)
	}
}

// Live is how many connected viewers key has.
func (b *OfferBuckets) Live(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.live[key]
}

// makeRoom drops the entries whose buckets have refilled (their clients
// went quiet: a new entry would be the same), or else the one least
// recently seen. Evicting an active client hands it a fresh burst, which
// is the price of a bounded table when more than max addresses post at
// once; the pending table's caps still bound what those offers cost.
func (b *OfferBuckets) makeRoom(now time.Time) {
	b.expireLocked(now)
	if len(b.clients) >= b.max {
		b.removeLocked(b.seen.Front())
	}
}

// Expire drops the entries whose buckets have refilled; the WHEP server's
// Run calls it now and then, so a table an address scan filled empties again
// without waiting for the next newcomer.
func (b *OfferBuckets) Expire() {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expireLocked(now)
}

// expireLocked costs one step per entry it drops, plus one: each entry is
// dropped at most once after the take that added it, so a full table's
// newcomers pay O(1) amortised.
func (b *OfferBuckets) expireLocked(now time.Time) {
	full := time.Duration(b.burst / b.rate * float64(time.Second))
	for e := b.seen.Front(); e != nil && now.Sub(e.Value.(*offerBucket).at) >= full; e = b.seen.Front() {
		b.removeLocked(e)
	}
}

func (b *OfferBuckets) removeLocked(e *list.Element) {
	delete(b.clients, b.seen.Remove(e).(*offerBucket).key)
}

// Len is how many clients the table holds.
func (b *OfferBuckets) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.clients)
}

// RetryAfter is a Retry-After value for wait: whole seconds, rounded up,
// at least 1.
func RetryAfter(wait time.Duration) int {
	return max(1, int(math.Ceil(wait.Seconds())))
}
