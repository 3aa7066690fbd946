package bwe

import (
	"math"
	"time"
)

// Ack is one packet a transport-wide feedback reports on.
type Ack struct {
	// Sent is the packet's departure on the sender's clock and Arrival
	// its arrival on the receiver's (any origins: only differences
	// count); Arrival means nothing unless Received.
	Sent, Arrival time.Duration
	// Size is the packet's size on the wire: RTP header and payload.
	Size     int
	Received bool
	// Probe marks a packet of a probe cluster (SendLog.RecordProbe):
	// its result is the cluster's (ProbeCluster), not GCC's.
	Probe bool
}

const (
	// beta is the share of the received rate a decrease goes to.
	beta = 0.85
	// maxOverReceived caps the estimate at this many times the received
	// rate (draft §5.5: the estimate must not run away from what the
	// link has shown it carries).
	maxOverReceived = 1.5
	// multiplicative is the increase per second far from convergence.
	multiplicative = 1.08
	// minBitrate is the floor of any estimate.
	minBitrate = 30_000
	// minAdditive is the least additive increase per second.
	minAdditive = 4_000
	// Loss-based control (draft §6): a window of lossWindow reported
	// packets (a third of a second at 2.5 Mbit/s: fewer would make 5 %
	// of random loss look like 10 % too often); above lossHigh the
	// estimate is cut by half the loss, below lossLow it may grow by
	// lossGrowth per window.
	lossWindow           = 100
	lossHigh, lossLow    = 0.10, 0.02
	lossGrowth           = 1.05
	defaultRTT           = 100 * time.Millisecond
	minDecreaseInterval  = 50 * time.Millisecond
	maxDecreaseInterval  = 200 * time.Millisecond
	convergenceSmoothing = 0.05
)

type rateState int8

const (
	hold rateState = iota
	increase
	decrease
)

// GCC is the transport-cc estimator of one viewer.
type GCC struct {
	delay delayDetector
	recv  receivedRate

	// rate is the delay-based estimate (A_hat), 0 until the received
	// rate is first known.
	rate       float64
	state      rateState
	lastChange time.Time
	// avgMax and varMax track the received rate at decreases (kbit/s),
	// to grow additively near it and multiplicatively away from it.
	avgMax, varMax float64

	// lossRate limits the estimate while the link loses heavily; 0: no
	// limit. lossN and lossLost count the current window.
	lossRate        float64
	lossN, lossLost int

	final        float64
	lastDecrease time.Time
	increasing   bool
}

// NewGCC returns an estimator with no estimate yet.
func NewGCC() *GCC {
	return &GCC{delay: newDelayDetector(), avgMax: -1, varMax: 0.4}
}

// Update takes the packets one feedback reports on, in transport
// sequence order, at now; rtt is the viewer's round trip (0: unknown).
func (g *GCC) Update(now time.Time, acks []Ack, rtt time.Duration) {
	if rtt <= 0 {
		rtt = defaultRTT
	}
	for _, a := range acks {
		g.lossN++
		if !a.Received {
			g.lossLost++
			continue
		}
		g.recv.add(a.Arrival, a.Size)
		g.delay.add(ms(a.Sent), ms(a.Arrival), a.Size)
	}
	r, known := g.recv.rate()
	if !known {
		return
	}
	if g.rate == 0 {
		g.rate, g.lastChange = r, now
	}
	g.control(now, r, rtt)
	g.lossControl(now, r)
	prev := g.final
	g.final = g.rate
	if g.lossRate > 0 && g.lossRate < g.final {
		g.final = g.lossRate
	}
	g.final = max(g.final, minBitrate)
	g.increasing = g.final > prev && g.state == increase
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// control is the delay-based rate controller (draft §5.5).
func (g *GCC) control(now time.Time, r float64, rtt time.Duration) {
	switch g.delay.state {
	case overusing:
		g.state = decrease
	case underusing:
		g.state = hold
	default:
		if g.state == hold {
			g.state, g.lastChange = increase, now
		}
	}
	switch g.state {
	case increase:
		dt := min(now.Sub(g.lastChange).Seconds(), 1)
		if dt <= 0 {
			return
		}
		rk := r / 1000
		if g.avgMax >= 0 && rk > g.avgMax+3*g.stdMax() {
			g.avgMax = -1 // the link grew: converge anew
		}
		var grown float64
		if g.avgMax >= 0 && math.Abs(rk-g.avgMax) <= 3*g.stdMax() {
			grown = g.rate + dt*g.additivePerSecond(rtt)
		} else {
			grown = g.rate + max(g.rate*(math.Pow(multiplicative, dt)-1), 1000*dt)
		}
		if limit := maxOverReceived*r + 10_000; grown > limit {
			grown = max(g.rate, limit)
		}
		// What the link delivered while not overused is a measured
		// lower bound: a stream sent whatever the estimate is a
		// continuous probe, so after a link recovers the estimate
		// follows at once instead of ramping for seconds.
		g.rate, g.lastChange = max(grown, r), now
	case decrease:
		interval := min(max(rtt, minDecreaseInterval), maxDecreaseInterval)
		if !g.lastDecrease.IsZero() && now.Sub(g.lastDecrease) < interval {
			return
		}
		cut := min(beta*r, g.rate)
		if cut < g.rate {
			g.lastDecrease = now
		}
		g.rate = max(cut, minBitrate)
		g.updateMax(r / 1000)
		g.state, g.lastChange = hold, now
	}
}

func (g *GCC) stdMax() float64 { return math.Sqrt(g.varMax * max(g.avgMax, 1)) }

// updateMax folds the received rate at a decrease into the convergence
// estimate (kbit/s), its variance normalised by the mean.
func (g *GCC) updateMax(rk float64) {
	if g.avgMax < 0 {
		g.avgMax = rk
	} else {
		g.avgMax = (1-convergenceSmoothing)*g.avgMax + convergenceSmoothing*rk
	}
	norm := max(g.avgMax, 1)
	g.varMax = (1-convergenceSmoothing)*g.varMax + convergenceSmoothing*(g.avgMax-rk)*(g.avgMax-rk)/norm
	g.varMax = min(max(g.varMax, 0.4), 2.5)
}

// additivePerSecond is half a packet per response time (draft §5.5):
// near the rate where the link was found full, grow slowly.
func (g *GCC) additivePerSecond(rtt time.Duration) float64 {
	bitsPerFrame := g.rate / 30
	packets := math.Ceil(bitsPerFrame / (1200 * 8))
	packetBits := bitsPerFrame / max(packets, 1)
	response := (rtt + 100*time.Millisecond).Seconds()
	return max(minAdditive, 0.5*packetBits/response)
}

// lossControl is the loss-based controller (draft §6), evaluated once a
// window of reported packets. It only ever limits, and lets go once the
// loss is over. Between the two thresholds the draft holds; here a limit
// may still grow up to what the link delivers, so that random loss of a
// few percent (Wi-Fi, mobile) cannot pin the estimate below what gets
// through after one unlucky window.
func (g *GCC) lossControl(now time.Time, r float64) {
	if g.lossN < lossWindow {
		return
	}
	p := float64(g.lossLost) / float64(g.lossN)
	g.lossN, g.lossLost = 0, 0
	switch {
	case p > lossHigh:
		base := g.rate
		if g.lossRate > 0 {
			base = min(base, g.lossRate)
		}
		// Never below most of what got through: the link carried it.
		cut := max(base*(1-0.5*p), beta*r, minBitrate)
		if cut < base {
			g.lastDecrease = now
		}
		g.lossRate = min(cut, base)
	case p < lossLow && g.lossRate > 0:
		g.lossRate *= lossGrowth
		if g.lossRate >= g.rate {
			g.lossRate = 0
		}
	case g.lossRate > 0 && g.lossRate < r:
		g.lossRate = min(g.lossRate*lossGrowth, r)
	}
}

// Estimate is the current estimate at now.
func (g *GCC) Estimate(now time.Time) Estimate {
	return Estimate{
		Bitrate: int64(g.final), Source: SourceTransportCC,
		Trend: trendOf(now, g.lastDecrease, g.increasing), LastDecrease: g.lastDecrease,
	}
}

// receivedRate is the rate of received bytes over the last rateWindow of
// arrival time, in buckets: a fixed few words per viewer whatever its
// packet rate.
type receivedRate struct {
	buckets [rateBuckets]int64
	cur     int64 // bucket number of the latest arrival
	first   int64
	started bool
}

const (
	rateBuckets = 11
	bucketLen   = 50 * time.Millisecond
)

func (r *receivedRate) add(arrival time.Duration, size int) {
	b := int64(arrival / bucketLen)
	if !r.started {
		r.started, r.cur, r.first = true, b, b
	}
	switch {
	case b > r.cur:
		for i := r.cur + 1; i <= b && i <= r.cur+rateBuckets; i++ {
			r.buckets[bucketIndex(i)] = 0
		}
		r.cur = b
	case b <= r.cur-rateBuckets:
		return // older than the window
	}
	r.buckets[bucketIndex(b)] += int64(size)
}

func bucketIndex(b int64) int { return int(((b % rateBuckets) + rateBuckets) % rateBuckets) }

// rate is the received rate in bits per second over the whole buckets
// before the latest (which is still filling), once a window has passed.
func (r *receivedRate) rate() (float64, bool) {
	if !r.started || r.cur-r.first < rateBuckets {
		return 0, false
	}
	var sum int64
	for i := r.cur - rateBuckets + 1; i < r.cur; i++ {
		sum += r.buckets[bucketIndex(i)]
	}
	return float64(sum*8) / ((rateBuckets - 1) * bucketLen).Seconds(), true
}
