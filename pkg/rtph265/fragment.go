// Package rtph265 cuts H.265 access units into RTP payloads (RFC 7798,
// one RTP stream, no DONL: sprop-max-don-diff is 0, as WebRTC uses it).
// As with pkg/rtph264, the cut does not depend on the viewer: Fragment
// runs once per access unit at the publisher, and each viewer stamps its
// own headers around the shared payloads with pkg/rtpstamp's Stamper, which
// knows nothing of the codec inside.
package rtph265

// DefaultMaxPayload is rtph264's: the same packet budget under common
// path MTUs (RTP header, SRTP tag, UDP/IP, a possible tunnel).
const DefaultMaxPayload = 1200

// MinMaxPayload is the smallest usable maxPayload: a fragmentation unit
// needs its two-byte payload header, its FU header and one byte of the
// NAL unit.
const MinMaxPayload = 4

const (
	typeAP = 48 // aggregation packet (RFC 7798 §4.4.2)
	typeFU = 49 // fragmentation unit (§4.4.3)

	naluHeaderLen = 2
	apSizeLen     = 2
	fuHeaderLen   = naluHeaderLen + 1

	// AP sizes are 16-bit.
	maxAggregatedNALU = 0xFFFF
)

// Fragment cuts the NAL units of one access unit into RTP payloads of at
// most maxPayload bytes. Runs of small NAL units go as aggregation
// packets (VPS, SPS and PPS in front of an IRAP picture fit one), a NAL
// unit that fits alone as a single NAL unit packet, and a larger one as
// fragmentation units.
//
// maxPayload <= 0 means DefaultMaxPayload; 1 to 3 are raised to
// MinMaxPayload. NAL units with forbidden_zero_bit (F) set are not
// H.265 and receivers drop them (pion: "corrupted"); they are dropped
// here, as are NAL units of no more than their two-byte header (end
// of sequence or bitstream: receivers such as pion refuse a packet of a
// bare header, and a live decoder needs neither), and those of types
// 48-63 (RFC 7798 takes 48-50 for its own packet types and leaves the
// rest unspecified: a receiver would misread them), are dropped.
//
// The input is never modified. Payloads share one backing buffer without
// overlapping, each capped at its length. nil when nothing is left.
func Fragment(nalus [][]byte, maxPayload int) [][]byte {
	switch {
	case maxPayload <= 0:
		maxPayload = DefaultMaxPayload
	case maxPayload < MinMaxPayload:
		maxPayload = MinMaxPayload
	}
	// A sizing pass, then a writing pass into exactly one buffer.
	size := packer{maxPayload: maxPayload}
	size.pack(nalus)
	if size.count == 0 {
		return nil
	}
	w := packer{maxPayload: maxPayload, buf: make([]byte, 0, size.bytes), out: make([][]byte, 0, size.count)}
	w.pack(nalus)
	return w.out
}

// sendable reports a NAL unit RFC 7798 can carry as it is.
func sendable(nalu []byte) bool {
	return len(nalu) > naluHeaderLen && nalu[0]&0x80 == 0 && naluType(nalu) < typeAP
}

func naluType(nalu []byte) byte { return (nalu[0] >> 1) & 0x3F }

// packer measures (out == nil) or writes the payloads of an access unit,
// one code path for both so that their sizes agree.
type packer struct {
	maxPayload int
	count      int
	bytes      int
	buf        []byte
	out        [][]byte
}

func (p *packer) writing() bool { return p.out != nil }

func (p *packer) pack(nalus [][]byte) {
	var run [][]byte
	apLen := naluHeaderLen
	flush := func() {
		switch len(run) {
		case 0:
		case 1:
			p.single(run[0])
		default:
			p.aggregate(run, apLen)
		}
		run, apLen = run[:0], naluHeaderLen
	}
	for _, n := range nalus {
		if !sendable(n) {
			continue
		}
		if len(n) > p.maxPayload {
			flush()
			p.fragment(n)
			continue
		}
		if len(n) > maxAggregatedNALU {
			flush()
			p.single(n)
			continue
		}
		grown := apLen + apSizeLen + len(n)
		if len(run) > 0 && grown > p.maxPayload {
			flush()
			grown = naluHeaderLen + apSizeLen + len(n)
		}
		run = append(run, n)
		apLen = grown
	}
	flush()
}

// take reserves n bytes of the buffer as the next payload.
func (p *packer) take(n int) []byte {
	at := len(p.buf)
	p.buf = p.buf[:at+n]
	b := p.buf[at : at+n : at+n]
	p.out = append(p.out, b)
	return b
}

func (p *packer) single(n []byte) {
	p.count++
	p.bytes += len(n)
	if p.writing() {
		copy(p.take(len(n)), n)
	}
}

// aggregate writes an AP. Its payload header (RFC 7798 §4.4.2): F is the
// OR of the aggregated F bits (all 0: see sendable), LayerId and TID the
// lowest of theirs.
func (p *packer) aggregate(run [][]byte, size int) {
	p.count++
	p.bytes += size
	if !p.writing() {
		return
	}
	b := p.take(size)
	layer, tid := byte(0x3F), byte(7)
	off := naluHeaderLen
	for _, n := range run {
		layer = min(layer, (n[0]&1)<<5|n[1]>>3)
		tid = min(tid, n[1]&7)
		b[off], b[off+1] = byte(len(n)>>8), byte(len(n))
		off += apSizeLen
		off += copy(b[off:], n)
	}
	b[0] = typeAP<<1 | layer>>5
	b[1] = layer<<3 | tid
}

// fragment writes FUs: the payload header is the NAL header with the
// type replaced by 49, so LayerId and TID travel unchanged, and the FU
// header carries S, E and the original type (§4.4.3).
func (p *packer) fragment(n []byte) {
	body := n[naluHeaderLen:]
	chunk := p.maxPayload - fuHeaderLen
	count := (len(body) + chunk - 1) / chunk
	p.count += count
	p.bytes += len(body) + count*fuHeaderLen
	if !p.writing() {
		return
	}
	h0 := n[0]&1 | typeFU<<1
	typ := naluType(n)
	for i := range count {
		part := body[i*chunk : min((i+1)*chunk, len(body))]
		b := p.take(fuHeaderLen + len(part))
		b[0], b[1], b[2] = h0, n[1], typ
		if i == 0 {
			b[2] |= 0x80
		}
		if i == count-1 {
			b[2] |= 0x40
		}
		copy(b[fuHeaderLen:], part)
	}
}
