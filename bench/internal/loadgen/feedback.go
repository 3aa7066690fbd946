package loadgen

import (
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"

	"github.com/srtwhep/srtwhep/internal/rtpseq"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// A browser sends its sender an RTCP receiver report about a second apart,
// with loss and jitter as it saw them, and NACKs as soon as a sequence
// number is missing; the server decrypts and parses all of it, and its
// congestion rule acts on the loss. A light viewer never hands its media
// to pion, so pion's report and NACK interceptors would see nothing: the
// viewer builds the same feedback from the counts it keeps at the socket,
// and pion only encrypts it (SRTCP) and sends it.
const (
	reportInterval = time.Second
	// nackRetryAfter spaces the NACKs for one missing packet. libwebrtc
	// waits about one round trip, at least a few milliseconds; loopback's
	// round trip is far shorter than the generator's receive rounds, so
	// this is about rounds, not the network.
	nackRetryAfter = 100 * time.Millisecond
	// nackMaxTries bounds the NACKs for one packet (libwebrtc: 10).
	nackMaxTries = 3
	// nackMaxPending is how many missing packets are chased at once: the
	// receive window remembers 64 sequence numbers. A larger hole is not
	// repaired packet by packet; the viewer asks for a keyframe instead.
	nackMaxPending = 64
	pliMinInterval = time.Second

	videoClockRate = 90000
	audioClockRate = 48000
)

// feedback is a light viewer's RTCP state. Everything but out and the
// counters belongs to the reactor goroutine, like the accountant it hangs
// from.
type feedback struct {
	ssrc uint32 // the viewer's own SSRC, the sender of its reports
	// nack: this viewer NACKs and asks for keyframes itself. A decoding
	// session leaves that to pion's NACK generator, which sees its media.
	nack bool

	nextReport int64 // unix ns; 0 until media arrives
	pending    [nackMaxPending]nackEntry
	nPending   int
	needPLI    bool
	lastPLI    int64

	// out is the session's SRTCP sender, set once the session is
	// connected; reports built before are dropped (and counted).
	out atomic.Pointer[whepclient.Session]
}

type nackEntry struct {
	seq    uint16
	sentAt int64 // unix ns of the last NACK; 0 = not sent yet
	tries  uint8
}

func newFeedback(ssrc uint32, nack bool) *feedback {
	return &feedback{ssrc: ssrc, nack: nack}
}

// lost records packets found missing by a jump of the highest sequence
// number to seq: the n before it.
func (f *feedback) lost(seq uint16, n int) {
	if !f.nack {
		return
	}
	if n >= nackMaxPending {
		// Beyond repair by NACK: drop the chase, ask for a keyframe.
		f.nPending = 0
		f.needPLI = true
		return
	}
	if over := f.nPending + n - nackMaxPending; over > 0 {
		// The oldest are the least likely to be repaired in time.
		f.nPending = copy(f.pending[:], f.pending[over:f.nPending])
	}
	for i := n; i >= 1; i-- {
		f.pending[f.nPending] = nackEntry{seq: seq - uint16(i)}
		f.nPending++
	}
}

// dueNACKs returns the missing sequence numbers to NACK now, in the order
// they were found (ascending), and forgets those that arrived, left the
// receive window or had their tries.
func (f *feedback) dueNACKs(now int64, w *rtpseq.Window, dst []uint16) []uint16 {
	kept := 0
	for _, e := range f.pending[:f.nPending] {
		arrived, inWindow := w.Has(e.seq)
		if arrived || !inWindow || e.tries >= nackMaxTries {
			continue
		}
		if e.sentAt == 0 || now-e.sentAt >= int64(nackRetryAfter) {
			e.sentAt = now
			e.tries++
			dst = append(dst, e.seq)
		}
		f.pending[kept] = e
		kept++
	}
	f.nPending = kept
	return dst
}

// collect returns the RTCP the viewer sends now: a receiver report when
// one is due, NACKs for missing video packets and a PLI after a hole NACKs
// cannot repair. It returns nil when there is nothing to send.
//
// The report goes alone, as pion's report interceptor sends it, without
// an SDES: an SDES names the viewer's own SSRC, which the server never
// heard of, and pion then opens a stream for it per viewer (with a
// warning in the log), a cost of the generator, not of the server.
func (a *accountant) collect(now int64) []rtcp.Packet {
	f := a.fb
	if f == nil {
		return nil
	}
	var pkts []rtcp.Packet
	if a.video.haveSSRC || a.audio.haveSSRC {
		if f.nextReport == 0 {
			// The phase comes from the random SSRC, so a thousand viewers
			// that joined together do not all report in the same round.
			f.nextReport = now + int64(f.ssrc)%int64(reportInterval)
		}
		if now >= f.nextReport {
			rr := &rtcp.ReceiverReport{SSRC: f.ssrc}
			if a.video.haveSSRC {
				rr.Reports = append(rr.Reports, a.video.report())
			}
			if a.audio.haveSSRC {
				rr.Reports = append(rr.Reports, a.audio.report())
			}
			pkts = append(pkts, rr)
			f.nextReport += int64(reportInterval)
			if f.nextReport <= now { // the reactor fell behind: no burst of reports
				f.nextReport = now + int64(reportInterval)
			}
		}
	}
	if f.nPending > 0 {
		var buf [nackMaxPending]uint16
		if seqs := f.dueNACKs(now, &a.video.seq, buf[:0]); len(seqs) > 0 {
			pkts = append(pkts, &rtcp.TransportLayerNack{SenderSSRC: f.ssrc, MediaSSRC: a.video.ssrc,
				Nacks: rtcp.NackPairsFromSequenceNumbers(seqs)})
		}
	}
	if f.needPLI && a.video.haveSSRC && now-f.lastPLI >= int64(pliMinInterval) {
		pkts = append(pkts, &rtcp.PictureLossIndication{SenderSSRC: f.ssrc, MediaSSRC: a.video.ssrc})
		f.needPLI, f.lastPLI = false, now
	}
	return pkts
}

// report is the stream's reception report block (RFC 3550 §6.4.1) and
// starts the next interval. LSR and DLSR stay 0: the server's sender
// reports are encrypted and a light viewer does not decrypt; RFC 3550
// allows 0 for "no sender report received".
func (s *rtpStream) report() rtcp.ReceptionReport {
	ext := s.extHighest()
	expected := int64(ext - s.priorExt)
	lost := s.lost - s.priorLost
	var fraction uint8
	if expected > 0 && lost > 0 {
		fraction = uint8(min(lost<<8/expected, 255))
	}
	s.priorExt, s.priorLost = ext, s.lost
	return rtcp.ReceptionReport{
		SSRC:               s.ssrc,
		FractionLost:       fraction,
		TotalLost:          uint32(min(max(s.lost, 0), 1<<23-1)), // 24 bits, signed
		LastSequenceNumber: ext,
		Jitter:             s.jitter >> 4,
	}
}

// extHighest is the extended highest sequence number received as a
// receiver report carries it: the low 32 bits, wraps in the upper 16.
func (s *rtpStream) extHighest() uint32 { return uint32(s.seq.Extended()) }

// updateJitter applies RFC 3550 A.8 to a packet that arrived at arrival
// (unix ns) in order: the interarrival jitter in RTP timestamp units, kept
// ×16 as the RFC does to stay in integers.
func (s *rtpStream) updateJitter(arrival int64, ts uint32, clockRate int64) {
	sec, frac := arrival/int64(time.Second), arrival%int64(time.Second)
	// Split so the product cannot overflow; only differences matter, so
	// the wrap to 32 bits is harmless.
	at := uint32(sec*clockRate + frac*clockRate/int64(time.Second))
	transit := int32(at - ts)
	if !s.haveTransit {
		s.transit, s.haveTransit = transit, true
		return
	}
	d := int64(transit - s.transit)
	s.transit = transit
	if d < 0 {
		d = -d
	}
	s.jitter = uint32(max(int64(s.jitter)+d-int64((s.jitter+8)>>4), 0))
}

// rtcpJob is what the reactor hands the RTCP sender: it never calls into
// pion itself, whose locks could stall every viewer's receive.
type rtcpJob struct {
	acc  *accountant
	pkts []rtcp.Packet
}

// sendRTCP writes the jobs through each session's SRTCP context until the
// channel closes, and counts what went out.
func sendRTCP(jobs <-chan rtcpJob) {
	for j := range jobs {
		c := j.acc.c
		w := j.acc.fb.out.Load()
		if w == nil {
			c.rtcpUnsent.Add(1)
			continue
		}
		if err := w.WriteRTCP(j.pkts); err != nil {
			c.rtcpUnsent.Add(1)
			continue
		}
		for _, p := range j.pkts {
			switch p := p.(type) {
			case *rtcp.ReceiverReport:
				c.reportsSent.Add(1)
			case *rtcp.TransportLayerNack:
				for _, pair := range p.Nacks {
					c.nackedSent.Add(uint64(len(pair.PacketList())))
				}
			case *rtcp.PictureLossIndication:
				c.plisSent.Add(1)
			}
		}
	}
}
