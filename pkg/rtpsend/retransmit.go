package rtpsend

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// historySize is how many of a viewer's latest packets can be resent on a
// NACK: about half a second of 720p at 2.5 Mbit/s, longer than any useful
// retransmission (a browser gives up on a packet after a few RTTs).
const historySize = 512

// maxResendPerNACK bounds the packets waiting to be resent, and so the
// work NACKs can ask for between two frames: a hostile or broken receiver
// cannot turn them into a flood.
const maxResendPerNACK = 128

// sentRecord remembers where a sent packet came from instead of a copy of
// it: the payload is the access unit's, shared by every viewer, so a
// viewer's retransmission history costs a few bytes per packet rather than
// the ~1.2 kB per packet (and ~375 kB per viewer) a private copy costs.
type sentRecord struct {
	au     *av.AccessUnit
	index  int // into au.Payloads
	seq    uint16
	ts     uint32
	marker bool
	// padding: a probe's padding-only packet (probe.go), resent as one.
	padding bool
	// resentAt is when the packet was last resent, in milliseconds since
	// the sender started plus one; 0: never.
	resentAt uint32
}

// history maps this viewer's sequence numbers back to the shared payloads.
// Step records and looks up; the lock keeps it safe for any other
// reader.
type history struct {
	mu   sync.Mutex
	recs [historySize]sentRecord
}

// record notes the packets of one access unit (their payloads are
// au.Payloads in order).
func (h *history) record(au *av.AccessUnit, pkts []rtp.Packet) {
	h.mu.Lock()
	for i := range pkts {
		p := &pkts[i]
		h.recs[p.SequenceNumber%historySize] = sentRecord{
			au: au, index: i, seq: p.SequenceNumber, ts: p.Timestamp, marker: p.Marker,
		}
	}
	h.mu.Unlock()
}

// recordPadding notes a probe cluster's padding packets, so a NACK for
// one that was lost is answered like any other: a receiver that waits
// for a sequence number to assemble the next picture gets it.
func (h *history) recordPadding(pkts []rtp.Packet) {
	h.mu.Lock()
	for i := range pkts {
		p := &pkts[i]
		h.recs[p.SequenceNumber%historySize] = sentRecord{seq: p.SequenceNumber, ts: p.Timestamp, padding: true}
	}
	h.mu.Unlock()
}

// lookup rebuilds packet seq if it is still in the history and was not
// resent since notBefore (same unit as sentRecord.resentAt).
func (h *history) lookup(seq uint16, notBefore uint32, pkt *rtp.Packet) bool {
	h.mu.Lock()
	r := h.recs[seq%historySize]
	h.mu.Unlock()
	if r.au == nil && !r.padding || r.seq != seq || r.resentAt > notBefore {
		return false
	}
	if r.padding {
		*pkt = rtp.Packet{
			Header:  rtp.Header{Version: 2, Padding: true, SequenceNumber: r.seq, Timestamp: r.ts},
			Payload: padBlock,
		}
		return true
	}
	*pkt = rtp.Packet{
		Header: rtp.Header{
			Version: 2, Marker: r.marker, SequenceNumber: r.seq, Timestamp: r.ts,
		},
		Payload: r.au.Payloads[r.index],
	}
	return true
}

// markResent notes that seq was resent at at.
func (h *history) markResent(seq uint16, at uint32) {
	h.mu.Lock()
	if r := &h.recs[seq%historySize]; r.seq == seq {
		r.resentAt = at
	}
	h.mu.Unlock()
}

// resend answers NACKs for seqs from Step, as one batch, within the
// viewer's and the server's budgets (budget.go); it returns how many
// packets went out again and how many NACKed ones did not.
func (w *Sender) resend(seqs []uint16, now time.Time) (sent int, dropped uint64) {
	b := &w.budget
	b.roll(now)
	allow := b.allowance()
	// Millisecond stamps from the sender's start, plus one so 0 means
	// never; a session outlives 49 days of them only in theory.
	stamp := uint32(now.Sub(w.epoch)/time.Millisecond) + 1
	gap := uint32(w.rtt.interval() / time.Millisecond)
	notBefore := uint32(0)
	if stamp > gap {
		notBefore = stamp - gap
	}
	pkts := w.resendBuf[:0]
	var size int64
	for _, seq := range seqs {
		var pkt rtp.Packet
		if !w.history.lookup(seq, notBefore, &pkt) {
			dropped++ // gone from the history, or resent within a round trip
			continue
		}
		n := int64(w.est.headerLen(false) + len(pkt.Payload))
		if n > allow-size || !w.resends.grant(n, now) {
			dropped++
			continue
		}
		size += n
		w.history.markResent(seq, stamp)
		pkt.SSRC, pkt.PayloadType = w.cfg.VideoSSRC, w.cfg.VideoPT
		pkts = append(pkts, pkt)
	}
	w.resendBuf = pkts
	if allow-size < rtpstamp.HeaderLen+minPayload {
		// Spent: until the window ends, NACKs are dropped as they come
		// instead of waking the sender.
		w.nacks.closedUntil.Store(b.end().UnixNano())
	}
	if len(pkts) == 0 {
		return 0, dropped
	}
	// Each resend is a new packet on the transport: a number of its
	// own, so feedback tells it from the lost original.
	w.est.stamp(pkts, now)
	k, _ := w.cfg.Out.WriteVideo(pkts)
	var written int64
	for i := range pkts[:k] {
		written += int64(w.est.headerLen(false) + len(pkts[i].Payload))
	}
	b.resent += written
	w.resends.resentBytes.Add(uint64(written))
	return k, dropped
}

// minPayload is the least a resent packet carries that is worth waking
// the sender for: below it the window's allowance is as good as spent.
const minPayload = 100

// nackBox carries NACKed sequence numbers from whoever reads the viewer's
// RTCP to the viewer's sender, which resends them between frames, so
// every media write of a viewer happens in its sender's steps and reading
// RTCP never writes. Each NACK wakes the sender.
type nackBox struct {
	wake atomic.Pointer[func()]
	mu   sync.Mutex
	seqs []uint16
	// closedUntil (Unix nanoseconds): the viewer's budget is spent until
	// then, so NACKs are dropped as they come; refused counts their
	// packets.
	closedUntil atomic.Int64
	refused     atomic.Uint64
}

// add queues the sequence numbers of n and wakes the sender, unless the
// box already held some: the sender, already woken, takes them all at
// once, so a flood of NACKs costs one step, not one each.
func (b *nackBox) add(n *rtcp.TransportLayerNack) {
	b.mu.Lock()
	waiting := len(b.seqs) > 0
	for _, pair := range n.Nacks {
		pair.Range(func(seq uint16) bool {
			// Past the bound they are dropped; the viewer asks again
			// for what still matters.
			if len(b.seqs) >= maxResendPerNACK {
				return false
			}
			b.seqs = append(b.seqs, seq)
			return true
		})
	}
	b.mu.Unlock()
	if w := b.wake.Load(); w != nil && !waiting {
		(*w)()
	}
}

func (b *nackBox) setWake(wake func()) { b.wake.Store(&wake) }

// take moves the waiting sequence numbers into dst.
func (b *nackBox) take(dst []uint16) []uint16 {
	b.mu.Lock()
	defer b.mu.Unlock()
	dst = append(dst[:0], b.seqs...)
	b.seqs = b.seqs[:0]
	return dst
}
