package admission

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkOfferBucketFull: the table is full of clients that are still
// active (none has refilled), and every op is a new client, so every op
// evicts; this is what an address scan costs each of its POSTs.
func BenchmarkOfferBucketFull(b *testing.B) {
	now := time.Unix(1000, 0)
	ob := NewOfferBuckets(DefaultOfferRate, DefaultOfferBurst, DefaultOfferClients)
	ob.now = func() time.Time { return now }
	keys := make([]string, DefaultOfferClients+b.N)
	for i := range keys {
		keys[i] = "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255)
	}
	for _, k := range keys[:DefaultOfferClients] {
		now = now.Add(time.Microsecond)
		ob.Take(k)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		// A microsecond apart: nobody's 4 s refill is ever reached.
		now = now.Add(time.Microsecond)
		ob.Take(keys[DefaultOfferClients+i])
	}
	b.StopTimer()
	if n := ob.Len(); n != DefaultOfferClients {
		b.Fatalf("table holds %d, want it full at %d", n, DefaultOfferClients)
	}
}

// BenchmarkOfferBucketRefused: one address flooding past its bucket while
// another address has 300 viewers watching; every op is a refusal, the
// cost a flood's POST meets before anything else.
func BenchmarkOfferBucketRefused(b *testing.B) {
	now := time.Unix(1000, 0)
	ob := NewOfferBuckets(DefaultOfferRate, DefaultOfferBurst, DefaultOfferClients)
	ob.now = func() time.Time { return now }
	for range 300 {
		ob.Joined("192.0.2.1")
	}
	for range DefaultOfferBurst {
		ob.Take("198.51.100.7")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if ok, _ := ob.Take("198.51.100.7"); ok {
			b.Fatal("a flood's offer was let in")
		}
	}
}
