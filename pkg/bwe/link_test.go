package bwe

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/pion/interceptor/pkg/twcc"
	"github.com/pion/rtcp"
)

// The traces the estimator is tested on: a live stream sent whatever the
// estimate (a video frame's packets in one burst every 33 ms, a 4x
// larger keyframe every 2 s, and a 20 ms audio packet), through a
// bottleneck link (a rate that may change, a drop-tail queue bounded in
// delay as tc's tbf bounds it, random loss, a one-way propagation
// delay), with the viewer's feedback built every 100 ms by pion's
// transport-cc receiver (pion/interceptor pkg/twcc, what a pion viewer
// runs) and marshalled and parsed as it travels.

// link is the bottleneck.
type link struct {
	rate      func(at time.Duration) float64 // bits/s
	queue     time.Duration                  // the most a packet may wait
	prop      time.Duration                  // one way
	loss      float64                        // random, not from the queue
	rng       *rand.Rand
	busyUntil time.Duration
}

// send returns when a packet of size bytes sent at at arrives.
func (l *link) send(at time.Duration, size int) (time.Duration, bool) {
	if l.loss > 0 && l.rng.Float64() < l.loss {
		return 0, false
	}
	start := max(at, l.busyUntil)
	if start-at > l.queue {
		return 0, false // tail drop
	}
	l.busyUntil = start + time.Duration(float64(size*8)/l.rate(start)*float64(time.Second))
	return l.busyUntil + l.prop, true
}

// event is what the sender sees, in time order: a packet it sends, or a
// feedback that reaches it.
type event struct {
	at   time.Duration
	seq  uint16
	size int
	fb   *rtcp.TransportLayerCC
}

// trace sends a stream of streamRate bits/s for dur through l.
func trace(l *link, streamRate float64, dur time.Duration) []event {
	const (
		fps      = 30
		mtu      = 1200 + 20 // payload and header with the extension
		audioLen = 180
	)
	var evs []event
	var arrivals []arrival
	var seq uint16
	sendPkt := func(at time.Duration, size int) {
		evs = append(evs, event{at: at, seq: seq, size: size})
		if arr, ok := l.send(at, size); ok {
			arrivals = append(arrivals, arrival{seq, arr})
		}
		seq++
	}
	frame := time.Second / fps
	audio := 20 * time.Millisecond
	nextAudio := time.Duration(0)
	for i := 0; time.Duration(i)*frame < dur; i++ {
		at := time.Duration(i) * frame
		for ; nextAudio < at; nextAudio += audio {
			sendPkt(nextAudio, audioLen)
		}
		// A 4x keyframe every 2 s, P-frames sized so the stream keeps
		// streamRate on average.
		bytes := streamRate / 8 / fps * 60 / 63
		if i%60 == 0 {
			bytes *= 4
		}
		for n := int(bytes); n > 0; n -= mtu - 20 {
			sendPkt(at, min(n+20, mtu))
		}
	}
	return withFeedback(evs, arrivals, dur, l.prop)
}

// arrival is a packet reaching the viewer.
type arrival struct {
	seq uint16
	at  time.Duration
}

// withFeedback adds to the sends evs the feedback the viewer sends on
// arrivals every 100 ms for dur, reaching the sender after delay, and
// sorts them all by time.
func withFeedback(evs []event, arrivals []arrival, dur, delay time.Duration) []event {
	slices.SortFunc(arrivals, func(a, b arrival) int { return int(a.at - b.at) })
	rec := twcc.NewRecorder(1)
	next := 0
	for t := 100 * time.Millisecond; t < dur; t += 100 * time.Millisecond {
		for ; next < len(arrivals) && arrivals[next].at <= t; next++ {
			rec.Record(2, arrivals[next].seq, int64(arrivals[next].at/time.Microsecond))
		}
		for _, p := range rec.BuildFeedbackPacket() {
			raw, err := p.Marshal()
			if err != nil {
				panic(err)
			}
			var fb rtcp.TransportLayerCC
			if err := fb.Unmarshal(raw); err != nil {
				panic(err)
			}
			evs = append(evs, event{at: t + delay, fb: &fb})
		}
	}
	slices.SortStableFunc(evs, func(a, b event) int { return int(a.at - b.at) })
	return evs
}

// constant is a link rate that never changes.
func constant(bps float64) func(time.Duration) float64 {
	return func(time.Duration) float64 { return bps }
}

// step is a link rate that changes from a to b at at.
func step(a, b float64, at time.Duration) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		if t < at {
			return a
		}
		return b
	}
}
