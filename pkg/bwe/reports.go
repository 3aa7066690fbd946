package bwe

import "time"

// ReportLoss is the estimator of a viewer without transport-cc: its
// receiver reports say what fraction of the packets sent in each
// interval it lost, and the server knows what it sent then. The rules
// are GCC's loss-based ones (draft §6), anchored on what got through, as
// the transport-cc estimator's are: a link that loses heavily is cut to
// most of what it delivered, a clean one grows towards 1.5 times what was
// sent, and loss between the two holds the estimate.
type ReportLoss struct {
	rate         float64
	lastDecrease time.Time
	increasing   bool
}

// Update takes one report interval at now: the fraction of packets the
// viewer lost in it and the rate the server sent at meanwhile (bits/s).
func (r *ReportLoss) Update(now time.Time, loss float64, sent float64) {
	if sent <= 0 || loss < 0 || loss > 1 {
		return
	}
	delivered := sent * (1 - loss)
	if r.rate == 0 {
		r.rate = max(delivered, minBitrate)
		return
	}
	r.increasing = false
	switch {
	case loss > lossHigh:
		cut := max(r.rate*(1-0.5*loss), beta*delivered, minBitrate)
		if cut < r.rate {
			r.rate, r.lastDecrease = cut, now
		}
	case loss < lossLow:
		grown := min(r.rate*lossGrowth, maxOverReceived*sent)
		if grown > r.rate {
			r.rate, r.increasing = grown, true
		}
	}
}

// Estimate is the current estimate at now; 0 before the first report.
func (r *ReportLoss) Estimate(now time.Time) Estimate {
	if r.rate == 0 {
		return Estimate{}
	}
	return Estimate{
		Bitrate: int64(r.rate), Source: SourceReceiverReports,
		Trend: trendOf(now, r.lastDecrease, r.increasing), LastDecrease: r.lastDecrease,
	}
}
