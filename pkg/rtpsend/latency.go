package rtpsend

import (
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/metrics"
)

// serverLatencyBounds are the histogram's upper bounds. The server's share
// is normally well under a millisecond; the upper buckets are for a CPU
// that cannot keep up, where queued frames go out paced.
var serverLatencyBounds = [...]time.Duration{
	250 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond,
	5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond, time.Second,
}

// Latency is the server's own share of the glass-to-glass delay:
// from the demuxer having a whole picture to the write of the picture's
// last RTP packet to a viewer. It is observed once per picture per viewer,
// so it is a fixed array of atomics: no lock, no allocation, and the
// Prometheus types are built only at scrape time.
type Latency struct {
	counts [len(serverLatencyBounds) + 1]atomic.Uint64 // per bucket, the last one above every bound
	sumNs  atomic.Uint64
}

// observeSent records au's trip through the server, now that its last
// packet is written. Catch-up pictures (the cached GOP a viewer starts
// with, and queued ones) are the caller's to leave out: their age is the
// cache's, not the server's delay.
func (h *Latency) observeSent(au *av.AccessUnit) {
	if au.Arrival.IsZero() {
		return
	}
	d := max(time.Since(au.Arrival), 0)
	i := 0
	for i < len(serverLatencyBounds) && d > serverLatencyBounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNs.Add(uint64(d))
}

// Snapshot returns the histogram in the metrics' cumulative form.
func (h *Latency) Snapshot() metrics.Histogram {
	out := metrics.Histogram{
		UpperBounds: make([]float64, len(serverLatencyBounds)),
		Cumulative:  make([]uint64, len(serverLatencyBounds)),
	}
	var n uint64
	for i, b := range serverLatencyBounds {
		n += h.counts[i].Load()
		out.UpperBounds[i] = b.Seconds()
		out.Cumulative[i] = n
	}
	// Read the sum last: a concurrent observation may then be in the sum
	// but not the counts, never in a bucket without its share of the sum.
	out.Count = n + h.counts[len(serverLatencyBounds)].Load()
	out.SumSeconds = time.Duration(h.sumNs.Load()).Seconds()
	return out
}
