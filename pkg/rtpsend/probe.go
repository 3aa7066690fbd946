package rtpsend

import (
	"sync/atomic"
	"time"

	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/bwe"
)

// Probing: before a viewer is moved up to a rendition its link has not
// carried, its switch (pkg/abr) asks whether the link would carry it.
// The sender answers with a probe cluster: a short train of extra packets
// paced at the rate in question, each with its own transport-wide
// number, whose arrival times the viewer's transport-cc feedback reports
// (bwe.ProbeCluster). Through a narrow link the train arrives spread to
// the link's rate and queues for a moment; nothing of the picture waits
// on it.
//
// What the packets carry: RTP padding-only packets on the video SSRC
// (the padding bit, 255 bytes of padding, no payload), numbered in the
// video's sequence like any packet. Not duplicates of sent video packets,
// although those would cost nothing (the history rebuilds them from the
// shared payloads): SRTP's replay protection (libsrtp in browsers,
// pion/srtp) drops a packet whose index the receiver already saw before
// anything reads its transport-wide number, so the feedback would report
// every duplicate lost. Not RTX either: the answer negotiates none. A
// padding packet's payload is one shared block, so a cluster allocates
// nothing per viewer; its cost is the packet count (255 bytes each where
// RTX could carry 1,200), bounded below.

// The prober's bounds. Vars so tests may shorten them.
var (
	// ProbeEvery is the least time between two clusters of one viewer.
	ProbeEvery = 5 * time.Second
	// probeDuration is how long a cluster lasts at its rate: long enough
	// that its bytes overrun the burst a token-bucket shaper lets through
	// at line rate (a cluster that fits in the bucket arrives as it left,
	// whatever the link's rate), short enough that what it queues on a
	// narrow link drains in a few hundred milliseconds.
	probeDuration = 80 * time.Millisecond
	// probeWait is how long after its last packet a cluster's feedback is
	// awaited before the result is read from what came.
	probeWait = time.Second
)

const (
	// probeMaxBytes caps a cluster (RTP bytes): at one cluster every
	// ProbeEvery, a viewer's probes cost at most 8 kB/s on average.
	probeMaxBytes   = 40 << 10
	probeMinPackets = 10
	// probePerStep bounds the packets one Step sends: late steps catch
	// up a little, not in a burst that would measure the server's
	// scheduling instead of the link.
	probePerStep = 16
	// probeCongested: no cluster while the estimate was cut this
	// recently: the link is already full.
	probeCongested = 2 * time.Second
)

// padBlock is every padding packet's payload: 255 bytes of padding whose
// last byte says so (RFC 3550 §5.1).
var padBlock = func() []byte {
	b := make([]byte, 255)
	b[254] = 255
	return b
}()

// prober is the sending side of the viewer's clusters: Probe's request,
// and the cluster Step is sending.
type prober struct {
	want atomic.Int64 // bit/s asked for, 0: none
	busy atomic.Bool  // a cluster is being sent or awaits its feedback

	// Step's alone.
	active  bool
	rate    int64
	start   time.Time
	sent, n int
	pkts    []rtp.Packet

	lastAt   atomic.Int64 // the last cluster's start, Unix nanoseconds
	clusters atomic.Uint64
}

// Probe asks for a probe cluster at bps bit/s and reports whether it
// will be sent: not without transport-cc, before the first video packet
// or while the viewer catches up to the live edge, while a cluster is
// under way or its result unread, within ProbeEvery of the last, or
// within two seconds of a cut of the estimate. It is called from Step
// (the viewer's switch asks from its source's Poll), which starts the
// cluster before it returns. Probes do not draw on the retransmission budget
// (webrtc.maxResendBitrate): they are bounded on their own, to one
// cluster of at most 40 kB per viewer every ProbeEvery.
func (w *Sender) Probe(bps int) bool {
	p := &w.probe
	if w.est.id == 0 || bps <= 0 || w.packets.Load() == 0 || w.catchingUp || p.busy.Load() {
		return false
	}
	now := w.now()
	if e := w.est.estimate(now); !e.LastDecrease.IsZero() && now.Sub(e.LastDecrease) < probeCongested {
		return false
	}
	if last := p.lastAt.Load(); last != 0 && now.Sub(time.Unix(0, last)) < ProbeEvery {
		return false
	}
	p.busy.Store(true)
	p.want.Store(int64(bps))
	return true
}

// ProbeResult returns the result of the last cluster once, when its
// feedback is in (or probeWait after its last packet went out).
func (w *Sender) ProbeResult() (bwe.ProbeResult, bool) {
	r, ok := w.est.probeResult(w.now())
	if ok {
		w.probe.busy.Store(false)
	}
	return r, ok
}

// ProbeClusters counts the clusters sent.
func (w *Sender) ProbeClusters() uint64 { return w.probe.clusters.Load() }

// sendProbe sends the packets of the cluster due by now and returns when
// the next one is due (zero: none).
func (w *Sender) sendProbe(now time.Time) time.Time {
	p := &w.probe
	if !p.active {
		bps := p.want.Swap(0)
		if bps == 0 {
			return time.Time{}
		}
		size := int64(w.est.headerLen(false) + len(padBlock))
		bytes := min(bps*int64(probeDuration)/int64(8*time.Second), probeMaxBytes)
		p.active, p.rate, p.start, p.sent = true, bps, now, 0
		p.n = max(int(bytes/size), probeMinPackets)
		p.lastAt.Store(now.UnixNano())
		w.est.beginProbe(p.n)
	}
	size := time.Duration(w.est.headerLen(false) + len(padBlock))
	gap := size * 8 * time.Second / time.Duration(p.rate)
	due := min(int(now.Sub(p.start)/gap)+1, p.n)
	k := min(due-p.sent, probePerStep)
	if k > 0 {
		p.pkts = w.st.Padding(p.pkts, k, padBlock)
		if len(p.pkts) == 0 {
			// No video yet to number them after: given up.
			p.active = false
			w.est.endProbe(now)
			return time.Time{}
		}
		w.history.recordPadding(p.pkts)
		w.est.stampProbe(p.pkts, now)
		n, _ := w.cfg.Out.WriteVideo(p.pkts)
		var bytes uint64
		for i := range p.pkts[:n] {
			bytes += uint64(w.est.headerLen(false) + len(p.pkts[i].Payload))
		}
		// The viewer's own counters, not the path's (CountSent): a
		// switch reads those as the rate the stream needs.
		w.packets.Add(uint64(n))
		w.bytes.Add(bytes)
		p.sent += k
	}
	if p.sent >= p.n {
		p.active = false
		p.clusters.Add(1)
		w.est.endProbe(now)
		return time.Time{}
	}
	return p.start.Add(time.Duration(p.sent) * gap)
}

// The estimator's side: which packets belong to the cluster (the send
// log marks them), and their acknowledgements.
type probeState struct {
	collecting bool
	cluster    bwe.ProbeCluster
	ended      time.Time // when its last packet went out; zero while sending
}

func (e *estimator) beginProbe(n int) {
	e.mu.Lock()
	e.probe = probeState{collecting: true, cluster: bwe.ProbeCluster{Packets: n}}
	e.mu.Unlock()
}

func (e *estimator) endProbe(now time.Time) {
	e.mu.Lock()
	e.probe.ended = now
	e.mu.Unlock()
}

// stampProbe numbers a cluster's packets as stamp does, marked as probes
// in the send log.
func (e *estimator) stampProbe(pkts []rtp.Packet, now time.Time) {
	e.stampAs(pkts, now, true)
}

// probeResult is the cluster's result once complete or waited for.
func (e *estimator) probeResult(now time.Time) (bwe.ProbeResult, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := &e.probe
	if !p.collecting || p.ended.IsZero() || !p.cluster.Complete() && now.Sub(p.ended) < probeWait {
		return bwe.ProbeResult{}, false
	}
	p.collecting = false
	return p.cluster.Result(), true
}

// takeProbeAcks moves the acknowledgements of probe packets out of acks
// into the cluster, so GCC sees only the stream's packets (the stream's
// packets queued behind a cluster still show GCC what it queued).
func (e *estimator) takeProbeAcks(acks []bwe.Ack) []bwe.Ack {
	kept := acks[:0]
	for _, a := range acks {
		if !a.Probe {
			kept = append(kept, a)
			continue
		}
		if e.probe.collecting {
			e.probe.cluster.Add(a)
		}
	}
	return kept
}
