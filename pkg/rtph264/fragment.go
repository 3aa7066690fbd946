// Package rtph264 turns H.264 access units into RTP (RFC 6184, packetization
// mode 1). Cutting NAL units into payloads does not depend on the viewer, so
// Fragment runs once per access unit at the publisher; each viewer then only
// stamps its own headers around the shared payloads (pkg/rtpstamp).
package rtph264

// DefaultMaxPayload keeps a packet (payload + 12-byte RTP header + SRTP tag +
// UDP/IP headers, possibly inside a TURN or VPN tunnel) under common path MTUs.
const DefaultMaxPayload = 1200

// MinMaxPayload is the smallest usable maxPayload: an FU-A fragment needs two
// header bytes and at least one byte of the NAL unit.
const MinMaxPayload = 3

const (
	typeSTAPA = 24
	typeFUA   = 28

	stapaHeaderLen = 1
	stapaSizeLen   = 2
	fuaHeaderLen   = 2

	// STAP-A sizes are 16-bit, so a larger NAL can never be aggregated even
	// when a caller allows payloads that large.
	maxAggregatedNALU = 0xFFFF
)

// Fragment cuts the NAL units of one access unit into RTP payloads of at most
// maxPayload bytes. Consecutive small NAL units are aggregated into STAP-A
// packets (typically SPS+PPS in front of an IDR), a NAL unit that fits alone
// goes as a single NAL unit packet, and a larger one as FU-A fragments.
//
// maxPayload <= 0 means DefaultMaxPayload; 1 and 2 are raised to
// MinMaxPayload. Empty NAL units and those of an unspecified type (0, 24-31)
// are dropped: RFC 6184 reuses those type numbers for its packet types, so a
// receiver would misread them, and a decoder ignores them anyway.
//
// The input is never modified. All payloads live in one backing buffer but do
// not overlap, and each has its capacity capped at its length, so appending
// to one cannot write into another. The result is nil when nothing is left
// to send.
func Fragment(nalus [][]byte, maxPayload int) [][]byte {
	switch {
	case maxPayload <= 0:
		maxPayload = DefaultMaxPayload
	case maxPayload < MinMaxPayload:
		maxPayload = MinMaxPayload
	}

	// Two passes over the same cutting logic: the first only sizes, so the
	// second can write into exactly one buffer and one slice of payloads.
	var sizing cutter
	sizing.cut(nalus, maxPayload)
	if sizing.count == 0 {
		return nil
	}
	w := cutter{
		write: true,
		buf:   make([]byte, 0, sizing.bytes),
		out:   make([][]byte, 0, sizing.count),
	}
	w.cut(nalus, maxPayload)
	return w.out
}

// sendable reports whether a NAL unit can be carried: it has a header byte
// and a type that H.264 defines (1-23).
func sendable(nalu []byte) bool {
	if len(nalu) == 0 {
		return false
	}
	t := nalu[0] & 0x1F
	return t >= 1 && t <= 23
}

// cutter either measures (write == false) or emits the payloads of an access
// unit; sharing one code path keeps the size pass and the write pass in step.
type cutter struct {
	write bool
	count int
	bytes int
	buf   []byte
	out   [][]byte
}

func (c *cutter) cut(nalus [][]byte, maxPayload int) {
	// first/last delimit the pending run of small NAL units; stapLen is the
	// STAP-A size that run would have.
	first, last, stapLen := -1, -1, stapaHeaderLen
	flush := func() {
		switch {
		case first < 0:
		case first == last:
			c.single(nalus[first])
		default:
			c.stapa(nalus[first:last+1], stapLen)
		}
		first, last, stapLen = -1, -1, stapaHeaderLen
	}

	for i, nalu := range nalus {
		if !sendable(nalu) {
			continue
		}
		if len(nalu) > maxPayload {
			flush()
			c.fua(nalu, maxPayload)
			continue
		}
		if len(nalu) > maxAggregatedNALU {
			flush()
			c.single(nalu)
			continue
		}
		grown := stapLen + stapaSizeLen + len(nalu)
		if first >= 0 && grown > maxPayload {
			flush()
			grown = stapaHeaderLen + stapaSizeLen + len(nalu)
		}
		if first < 0 {
			first = i
		}
		last, stapLen = i, grown
	}
	flush()
}

// take reserves n bytes of the backing buffer as one payload.
func (c *cutter) take(n int) []byte {
	start := len(c.buf)
	c.buf = c.buf[:start+n]
	p := c.buf[start : start+n : start+n]
	c.out = append(c.out, p)
	return p
}

func (c *cutter) single(nalu []byte) {
	c.count++
	c.bytes += len(nalu)
	if c.write {
		copy(c.take(len(nalu)), nalu)
	}
}

func (c *cutter) stapa(run [][]byte, size int) {
	c.count++
	c.bytes += size
	if !c.write {
		return
	}
	p := c.take(size)
	// RFC 6184 5.7.1: F is the OR of the aggregated F bits, NRI their maximum.
	var f, nri byte
	off := stapaHeaderLen
	for _, n := range run {
		if !sendable(n) {
			continue
		}
		f |= n[0] & 0x80
		nri = max(nri, n[0]&0x60)
		p[off] = byte(len(n) >> 8)
		p[off+1] = byte(len(n))
		off += stapaSizeLen
		off += copy(p[off:], n)
	}
	p[0] = f | nri | typeSTAPA
}

func (c *cutter) fua(nalu []byte, maxPayload int) {
	body := nalu[1:]
	chunk := maxPayload - fuaHeaderLen
	n := (len(body) + chunk - 1) / chunk
	c.count += n
	c.bytes += len(body) + n*fuaHeaderLen
	if !c.write {
		return
	}
	// F and NRI travel in the FU indicator, the NAL type in the FU header,
	// so the receiver can rebuild the original NAL header byte.
	indicator := nalu[0]&0xE0 | typeFUA
	typ := nalu[0] & 0x1F
	for i := 0; i < n; i++ {
		part := body[i*chunk : min((i+1)*chunk, len(body))]
		p := c.take(fuaHeaderLen + len(part))
		p[0] = indicator
		p[1] = typ
		if i == 0 {
			p[1] |= 0x80
		}
		if i == n-1 {
			p[1] |= 0x40
		}
		copy(p[fuaHeaderLen:], part)
	}
}
