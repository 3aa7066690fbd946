package rtpsend

import (
	"encoding/binary"
	"sync"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/bwe"
	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// The viewer's bandwidth estimate (pkg/bwe). With transport-wide
// congestion control negotiated (sdpoffer.TransportCC), every packet the
// viewer gets (video, audio when its section negotiated it too, and
// retransmissions, each under a new number) carries the next number of
// one counter in a one-byte header extension, the send log remembers
// when it left, and the viewer's transport-cc feedback drives GCC.
// Without it, or until the first feedback, its receiver reports' loss
// does (bwe.ReportLoss).

// tccHeaderLen is an RTP header with the one-byte extension block that
// carries the transport-wide sequence number: 4 bytes of block header,
// 1 of element header, 2 of number and 1 of padding.
const tccHeaderLen = rtpstamp.HeaderLen + 8

// estimator is one viewer's estimate and its stamping.
type estimator struct {
	// id is the extension's ID, 0 without transport-cc; audio says
	// whether audio packets carry it too. Set once, by New.
	id    uint8
	audio bool

	// Step's: the next number, and what backs the packets' extensions
	// (the packets are encrypted before the Output returns, so one
	// frame's backing serves the next).
	seq      uint16
	ext      []rtp.Extension
	seqBytes []byte

	// mu guards the rest between Step (recording sends) and OnRTCP
	// (feedback, reports) and whoever reads the estimate.
	mu    sync.Mutex
	log   bwe.SendLog
	gcc   *bwe.GCC
	rr    bwe.ReportLoss
	acks  []bwe.Ack
	epoch time.Time
	// probe collects the acknowledgements of a probe cluster (probe.go).
	probe probeState
	// The receiver-report window: when the last video report came and
	// the bytes sent by then.
	rrAt    time.Time
	rrBytes uint64
}

func newEstimator(id uint8, audio bool, epoch time.Time) *estimator {
	e := &estimator{id: id, audio: audio && id != 0, epoch: epoch}
	if id != 0 {
		e.gcc = bwe.NewGCC()
	}
	return e
}

// headerLen is the header size of the video packets (and
// retransmissions), audio that of the audio packets.
func (e *estimator) headerLen(audio bool) int {
	if e.id == 0 || audio && !e.audio {
		return rtpstamp.HeaderLen
	}
	return tccHeaderLen
}

// stamp numbers pkts and logs them as sent at now; nothing without
// transport-cc.
func (e *estimator) stamp(pkts []rtp.Packet, now time.Time) { e.stampAs(pkts, now, false) }

func (e *estimator) stampAs(pkts []rtp.Packet, now time.Time, probe bool) {
	if e.id == 0 || len(pkts) == 0 {
		return
	}
	if len(e.ext) < len(pkts) {
		n := max(len(pkts), 2*len(e.ext))
		e.ext, e.seqBytes = make([]rtp.Extension, n), make([]byte, 2*n)
	}
	at := now.Sub(e.epoch)
	e.mu.Lock()
	for i := range pkts {
		h := &pkts[i].Header
		b := e.seqBytes[2*i : 2*i+2 : 2*i+2]
		binary.BigEndian.PutUint16(b, e.seq)
		// A fresh header from the Stamper (or the history) has no
		// extension: SetExtension fills the one slot of its backing in
		// place, with no allocation.
		h.Extension, h.Extensions = false, e.ext[i:i:i+1]
		_ = h.SetExtension(e.id, b) // an ID of 1 to 14 and 2 bytes always fit
		if probe {
			e.log.RecordProbe(e.seq, at, tccHeaderLen+len(pkts[i].Payload))
		} else {
			e.log.Record(e.seq, at, tccHeaderLen+len(pkts[i].Payload))
		}
		e.seq++
	}
	e.mu.Unlock()
}

// onFeedback takes one transport-cc feedback.
func (e *estimator) onFeedback(fb *rtcp.TransportLayerCC, now time.Time, rtt time.Duration) {
	if e.id == 0 {
		return
	}
	e.mu.Lock()
	e.acks = e.takeProbeAcks(e.log.Acks(fb, e.acks[:0]))
	if len(e.acks) > 0 {
		e.gcc.Update(now, e.acks, rtt)
	}
	e.mu.Unlock()
}

// onReport takes a receiver report block about the video: its fraction
// lost covers the interval since the viewer's previous report, and sent
// is every byte the sender has put on the wire.
func (e *estimator) onReport(rep rtcp.ReceptionReport, now time.Time, sent uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.rrAt.IsZero() {
		e.rrAt, e.rrBytes = now, sent
		return
	}
	// Browsers add report blocks to other feedback at will: a window
	// shorter than this says too little about a rate.
	elapsed := now.Sub(e.rrAt)
	if elapsed < 200*time.Millisecond {
		return
	}
	rate := float64(sent-e.rrBytes) * 8 / elapsed.Seconds()
	e.rr.Update(now, float64(rep.FractionLost)/256, rate)
	e.rrAt, e.rrBytes = now, sent
}

// estimate is transport-cc's once it has one, else the receiver
// reports'.
func (e *estimator) estimate(now time.Time) bwe.Estimate {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gcc != nil {
		if est := e.gcc.Estimate(now); est.Bitrate > 0 {
			return est
		}
	}
	return e.rr.Estimate(now)
}

// Estimate is the viewer's bandwidth estimate now: what a switcher
// between renditions reads. Safe from any goroutine.
func (w *Sender) Estimate() bwe.Estimate { return w.est.estimate(time.Now()) }

// Started is when the sender began, the origin of SinceDecrease for an
// estimate that never decreased.
func (w *Sender) Started() time.Time { return w.epoch }
