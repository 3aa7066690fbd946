package bwe

import (
	"time"

	"github.com/pion/rtcp"
)

// SendLogSize is how many of a viewer's latest packets the send log
// remembers: feedback comes every 50 to 100 ms, and 1,024 packets are
// over a second at 8 Mbit/s (three at 2.5 Mbit/s).
const SendLogSize = 1024

// sent is one packet in the log: 8 bytes.
type sent struct {
	at   uint32 // microseconds on the log's clock, modulo 2^32 (71 minutes)
	size uint16 // bytes on the wire; the top bit marks it acknowledged, the next a probe
	seq  uint16
}

const (
	ackedBit = 1 << 15
	probeBit = 1 << 14
	sizeMask = probeBit - 1
)

// SendLog remembers when each of a viewer's latest packets left and how
// big it was, by transport-wide sequence number, in a fixed ring, and
// turns transport-cc feedback into acknowledgements of them. It is
// what a viewer keeps per packet for the estimate: no allocation, no
// lock (its owner serialises Record and Acks).
type SendLog struct {
	recs [SendLogSize]sent
	last int64 // microseconds of the latest Record, unwrapped

	// The feedback's 24-bit reference time (64 ms units), unwrapped.
	refSet bool
	ref    int64
}

// Record notes packet seq of size bytes sent at at (since any fixed
// origin, e.g. the sender's start).
func (l *SendLog) Record(seq uint16, at time.Duration, size int) {
	l.record(seq, at, size, 0)
}

// RecordProbe is Record for a packet of a probe cluster: its Ack says
// Probe.
func (l *SendLog) RecordProbe(seq uint16, at time.Duration, size int) {
	l.record(seq, at, size, probeBit)
}

func (l *SendLog) record(seq uint16, at time.Duration, size int, flag uint16) {
	us := int64(at / time.Microsecond)
	l.last = max(l.last, us)
	l.recs[seq%SendLogSize] = sent{at: uint32(us), size: uint16(min(size, sizeMask)) | flag, seq: seq}
}

// departure unwraps a record's time against the latest one.
func (l *SendLog) departure(r sent) time.Duration {
	return time.Duration(l.last-int64(uint32(l.last)-r.at)) * time.Microsecond
}

// Acks appends to dst the packets fb reports on that the log still
// holds, in sequence order, each at most once as received; a packet
// reported lost and later received counts in both reports, as a late
// arrival does for GCC's loss controller. Statuses past SendLogSize
// are ignored (no viewer has more packets in flight).
func (l *SendLog) Acks(fb *rtcp.TransportLayerCC, dst []Ack) []Ack {
	ref := int64(fb.ReferenceTime & 0xffffff)
	if l.refSet {
		// The nearest unwrapping of the 24-bit counter.
		ref = l.ref + ((ref-l.ref+1<<23)&0xffffff - 1<<23)
	}
	l.ref, l.refSet = ref, true
	arrival := time.Duration(ref) * 64 * time.Millisecond
	seq := fb.BaseSequenceNumber
	remaining := min(int(fb.PacketStatusCount), SendLogSize)
	deltas := fb.RecvDeltas
	status := func(s uint16) {
		received := s != rtcp.TypeTCCPacketNotReceived
		if s == rtcp.TypeTCCPacketReceivedSmallDelta || s == rtcp.TypeTCCPacketReceivedLargeDelta {
			if len(deltas) > 0 {
				arrival += time.Duration(deltas[0].Delta) * time.Microsecond
				deltas = deltas[1:]
			}
		}
		r := &l.recs[seq%SendLogSize]
		if r.seq == seq && r.size&ackedBit == 0 {
			dst = append(dst, Ack{Sent: l.departure(*r), Arrival: arrival, Size: int(r.size & sizeMask),
				Received: received, Probe: r.size&probeBit != 0})
			if received {
				r.size |= ackedBit
			}
		}
		seq++
		remaining--
	}
	for _, c := range fb.PacketChunks {
		switch c := c.(type) {
		case *rtcp.RunLengthChunk:
			for range min(int(c.RunLength), remaining) {
				status(c.PacketStatusSymbol)
			}
		case *rtcp.StatusVectorChunk:
			for _, s := range c.SymbolList[:min(len(c.SymbolList), remaining)] {
				status(s)
			}
		}
		if remaining <= 0 {
			break
		}
	}
	return dst
}
