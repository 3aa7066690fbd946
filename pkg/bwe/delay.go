package bwe

import "math"

// The delay-based half of GCC (draft-ietf-rmcat-gcc-02 §5): packets sent
// within burstTime of each other form a group; the change of one-way
// delay between consecutive groups (how much later the group arrived
// than it was sent, relative to the group before) goes into a trend
// filter, and a detector with an adaptive threshold calls the link over-
// or underused. The filter is the linear-regression trendline of today's
// libwebrtc in place of the draft's Kalman filter: it smooths the bursts
// of one video frame (which a live sender writes in one go) better, with
// fewer parameters.

const (
	// burstTime groups packets by departure (draft §5.2), and merges
	// packets that arrive this close behind a group; maxBurst bounds
	// such a group's arrivals.
	burstTime = 5   // ms
	maxBurst  = 100 // ms
	// trendWindow is how many groups the regression spans.
	trendWindow = 20
	// trendSmoothing is the weight of the past in the smoothed delay.
	trendSmoothing = 0.9
	// trendGain scales the slope into a delay change comparable with
	// the threshold (libwebrtc's threshold gain).
	trendGain = 4
	// maxDeltas caps how much history strengthens the trend.
	maxDeltas = 60
	// overuseTime is how long the trend must stay above the threshold.
	overuseTime = 10 // ms
	// Threshold adaptation (draft §5.4): up slowly, down fast, within
	// [minThreshold, maxThreshold] ms.
	kUp, kDown                 = 0.0087, 0.039
	initThreshold              = 12.5
	minThreshold, maxThreshold = 6, 600
	// maxThresholdStep skips outliers (a route change) in adaptation.
	maxThresholdStep = 15
)

// usage is the detector's verdict on the link.
type usage int8

const (
	normal usage = iota
	overusing
	underusing
)

// group is an arrival group: packets sent within burstTime of its first.
type group struct {
	firstSent, lastSent, firstArrival, lastArrival float64 // ms
	size                                           int
}

// delayDetector turns acknowledged packets into a usage signal.
type delayDetector struct {
	cur, prev         group
	haveCur, havePrev bool

	// Trendline state.
	deltas        int
	firstArrival  float64
	accumulated   float64
	smoothed      float64
	xs, ys        [trendWindow]float64
	n, head       int
	prevTrend     float64
	overusingTime float64
	overuseCount  int
	state         usage

	threshold float64
	lastAdapt float64
	haveAdapt bool
}

func newDelayDetector() delayDetector {
	return delayDetector{threshold: initThreshold, overusingTime: -1}
}

// add takes one received packet, in send order: sent and arrival in ms
// on the sender's and the receiver's clocks.
func (d *delayDetector) add(sent, arrival float64, size int) {
	if !d.haveCur {
		d.cur = group{firstSent: sent, lastSent: sent, firstArrival: arrival, lastArrival: arrival, size: size}
		d.haveCur = true
		return
	}
	if sent < d.cur.firstSent {
		return // reordered across groups: too late to count
	}
	if sent-d.cur.firstSent <= burstTime || d.queuedBehind(sent, arrival) {
		d.cur.lastSent = max(d.cur.lastSent, sent)
		d.cur.lastArrival = max(d.cur.lastArrival, arrival)
		d.cur.size += size
		return
	}
	if d.havePrev {
		// From the groups' first packets: a live sender writes a whole
		// frame at once, so a keyframe's own burst spreads its later
		// packets (and those queued behind it, see queuedBehind) by the
		// link's serialisation, which is no sign of a queue growing;
		// the first packet of each group sees what earlier traffic left
		// queued.
		sendDelta := d.cur.firstSent - d.prev.firstSent
		arrivalDelta := d.cur.firstArrival - d.prev.firstArrival
		d.update(arrivalDelta-sendDelta, sendDelta, d.cur.lastArrival)
	}
	d.prev, d.havePrev = d.cur, true
	d.cur = group{firstSent: sent, lastSent: sent, firstArrival: arrival, lastArrival: arrival, size: size}
}

// queuedBehind reports whether a packet sent after the current group
// arrived back to back with it, less late than it was sent: it waited
// in a queue behind the group, and belongs to its burst (draft §5.2's
// pre-filtering, as libwebrtc merges bursts).
func (d *delayDetector) queuedBehind(sent, arrival float64) bool {
	arrivalDelta := arrival - d.cur.lastArrival
	return arrivalDelta >= 0 && arrivalDelta <= burstTime &&
		arrivalDelta-(sent-d.cur.lastSent) < 0 &&
		arrival-d.cur.firstArrival < maxBurst
}

// update feeds the delay variation of one group into the trendline and
// the detector.
func (d *delayDetector) update(delta, sendDelta, arrival float64) {
	if d.deltas == 0 {
		d.firstArrival = arrival
	}
	d.deltas = min(d.deltas+1, maxDeltas)
	d.accumulated += delta
	d.smoothed = trendSmoothing*d.smoothed + (1-trendSmoothing)*d.accumulated
	d.xs[d.head], d.ys[d.head] = arrival-d.firstArrival, d.smoothed
	d.head = (d.head + 1) % trendWindow
	if d.n < trendWindow {
		d.n++
	}
	trend := d.prevTrend
	if d.n == trendWindow {
		if s, ok := slope(d.xs[:], d.ys[:]); ok {
			trend = s
		}
	}
	d.detect(trend, sendDelta, arrival)
}

// slope is the least-squares slope of ys over xs.
func slope(xs, ys []float64) (float64, bool) {
	var sx, sy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
	}
	mx, my := sx/float64(len(xs)), sy/float64(len(ys))
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	if den == 0 {
		return 0, false
	}
	return num / den, true
}

// detect compares the trend with the adaptive threshold (draft §5.4).
func (d *delayDetector) detect(trend, sendDelta, now float64) {
	t := float64(d.deltas) * trend * trendGain
	switch {
	case t > d.threshold:
		if d.overusingTime < 0 {
			d.overusingTime = sendDelta / 2
		} else {
			d.overusingTime += sendDelta
		}
		d.overuseCount++
		if d.overusingTime > overuseTime && d.overuseCount > 1 && trend >= d.prevTrend {
			d.overusingTime, d.overuseCount = 0, 0
			d.state = overusing
		}
	case t < -d.threshold:
		d.overusingTime, d.overuseCount = -1, 0
		d.state = underusing
	default:
		d.overusingTime, d.overuseCount = -1, 0
		d.state = normal
	}
	d.prevTrend = trend
	d.adapt(t, now)
}

// adapt moves the threshold towards |t|, so that the detector neither
// starves against a concurrent TCP flow nor fires on jitter.
func (d *delayDetector) adapt(t, now float64) {
	if !d.haveAdapt {
		d.lastAdapt, d.haveAdapt = now, true
	}
	abs := math.Abs(t)
	if abs > d.threshold+maxThresholdStep {
		d.lastAdapt = now
		return
	}
	k := kUp
	if abs < d.threshold {
		k = kDown
	}
	dt := min(now-d.lastAdapt, 100)
	d.threshold += k * (abs - d.threshold) * dt
	d.threshold = min(max(d.threshold, minThreshold), maxThreshold)
	d.lastAdapt = now
}
