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
