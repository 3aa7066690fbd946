// Package bwe estimates the bandwidth of one viewer's link from what the
// viewer reports: transport-wide congestion control feedback where the
// viewer negotiated it (a delay- and loss-based estimator following
// Google Congestion Control, draft-ietf-rmcat-gcc-02), receiver-report
// loss otherwise. It only estimates: it starts nothing, owns no
// goroutine, reads no clock (callers pass the time), and is not safe for
// concurrent use.
//
// Why not pion/interceptor's pkg/gcc: its SendSideBWE starts two
// goroutines per estimator (its delay controller's arrival-group and
// rate pipelines) and, through its pacer and feedback adapter, records
// every packet sent in a list element and a map entry (an allocation and
// a clock read per packet) behind a lock: 200 viewers would cost 400
// goroutines and ~50,000 allocations a second for the stamping alone.
// Here a viewer's sender records its sends in a fixed ring (pkg/rtpsend)
// and feeds this package the acknowledgements it decodes from the
// feedback; the tests check the estimates against pion's on the same
// feedback.
//
// A server sending one live stream sends what the stream is, whatever
// the estimate (what the link would carry beyond it, a probe cluster
// asks: probe.go). So the estimator starts from the rate
// the viewer actually received instead of a guessed start rate that
// GCC would ramp up from for tens of seconds, and it never claims more
// than 1.5 times what was received (GCC's own cap): the estimate says
// what the link carried and whether it struggles, which is what choosing
// a rendition needs.
package bwe

import "time"

// Source says where an estimate comes from.
type Source uint8

const (
	// SourceNone: nothing measured yet.
	SourceNone Source = iota
	// SourceTransportCC: transport-wide feedback, delay and loss.
	SourceTransportCC
	// SourceReceiverReports: RTCP receiver reports' loss only (a viewer
	// that did not negotiate transport-cc).
	SourceReceiverReports
)

// String names the source for the API and metrics labels.
func (s Source) String() string {
	switch s {
	case SourceTransportCC:
		return "transport-cc"
	case SourceReceiverReports:
		return "receiver-reports"
	}
	return "none"
}

// Trend is where the estimate is heading.
type Trend int8

const (
	// Holding: no recent change worth reacting to.
	Holding Trend = 0
	// Increasing: the link shows headroom and the estimate grows.
	Increasing Trend = 1
	// Decreasing: the estimate was cut within the last second (queues
	// growing or heavy loss).
	Decreasing Trend = -1
)

func (t Trend) String() string {
	switch t {
	case Increasing:
		return "increasing"
	case Decreasing:
		return "decreasing"
	}
	return "holding"
}

// Estimate is one viewer's bandwidth estimate, as a switcher between
// renditions reads it: move down when Bitrate falls below the rendition's
// rate, move up only after a while without a decrease.
type Estimate struct {
	// Bitrate is the estimate in bits per second; 0 until the first one.
	Bitrate int64
	Source  Source
	Trend   Trend
	// LastDecrease is when the estimate was last cut; zero if never.
	LastDecrease time.Time
}

// SinceDecrease is how long the estimate has gone without a cut at now;
// since start when it never had one.
func (e Estimate) SinceDecrease(now, start time.Time) time.Duration {
	if e.LastDecrease.IsZero() {
		return now.Sub(start)
	}
	return now.Sub(e.LastDecrease)
}

// decreasingFor is how long after a cut the trend stays Decreasing.
const decreasingFor = time.Second

func trendOf(now, lastDecrease time.Time, increasing bool) Trend {
	switch {
	case !lastDecrease.IsZero() && now.Sub(lastDecrease) < decreasingFor:
		return Decreasing
	case increasing:
		return Increasing
	}
	return Holding
}
