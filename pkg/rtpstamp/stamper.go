// Package rtpstamp gives each viewer's video packets their RTP headers:
// its own SSRC, payload type, sequence space and timestamp offset, over
// payloads the publisher cut once for all viewers (pkg/rtph264 for
// H.264, pkg/rtph265 for H.265). The headers do not depend on the codec,
// so one Stamper serves both.
package rtpstamp

import (
	"encoding/binary"

	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// defaultCatchUpStep is the timestamp distance between catch-up access
// units unless SetCatchUpStep says otherwise: 1 ms at 90 kHz, small enough
// that a browser decodes a cached GOP at once instead of pacing it out at the
// original frame rate.
const defaultCatchUpStep = av.ClockRate / 1000

// HeaderLen is the size of an RTP header without CSRCs or extensions.
const HeaderLen = 12

// Stamper holds one viewer's RTP state: its own SSRC, payload type, sequence
// space and timestamp offset. Not safe for concurrent use.
type Stamper struct {
	ssrc        uint32
	payloadType uint8
	seq         uint16
	lastTS      uint32
	offset      uint32
	started     bool
	catchUpStep uint32
}

// NewStamper returns a Stamper whose first packet gets sequence number
// initialSeq and timestamp initialTS. Pick both at random per viewer
// (RFC 3550 5.1) unless a test needs them fixed.
func NewStamper(ssrc uint32, payloadType uint8, initialSeq uint16, initialTS uint32) *Stamper {
	return &Stamper{ssrc: ssrc, payloadType: payloadType, seq: initialSeq, lastTS: initialTS,
		catchUpStep: defaultCatchUpStep}
}

// SetCatchUpStep sets the timestamp distance between catch-up access units.
// A sender that paces its catch-up burst sets it to its pacing interval, so
// the receiver sees timestamps advance exactly as fast as frames arrive and
// its jitter estimate stays flat.
func (s *Stamper) SetCatchUpStep(ticks uint32) {
	if ticks > 0 {
		s.catchUpStep = ticks
	}
}

// Stamp returns the RTP packets of au, reusing dst's backing array and growing
// it only when au has more payloads than dst can hold. Each packet shares its
// Payload with au.Payloads (never write to it); the marker bit is set on the
// last packet only.
//
// Sequence numbers continue from the previous call whatever access units the
// caller skipped, so a viewer that dropped frames shows no sequence gap (which
// would only trigger useless NACKs).
//
// Timestamps are au.PTS plus a per-viewer offset, modulo 2^32. The first
// access unit ever gets the initial timestamp. A catch-up access unit (the
// cached GOP sent in a burst to a new viewer) is stamped 1 ms after the
// previous one and re-anchors the offset there, so the live access unit that
// follows keeps its real PTS distance from the last catch-up frame: the
// browser shows the cached GOP at once and then plays the live edge without
// waiting a GOP.
//
// An access unit without payloads yields no packets and leaves the state as
// it was. Stamp does not cut NAL units itself: the publisher must have filled
// au.Payloads with its codec's Fragment, once for all viewers.
func (s *Stamper) Stamp(dst []rtp.Packet, au *av.AccessUnit, catchUp bool) []rtp.Packet {
	return s.StampAt(dst, au, au.PTS, catchUp)
}

// StampAt is Stamp with pts in place of au.PTS: a sender that continues one
// viewer's stream across publishers, whose PTS origins are unrelated, maps
// each publisher's PTS onto one timeline of its own and stamps from that.
func (s *Stamper) StampAt(dst []rtp.Packet, au *av.AccessUnit, pts int64, catchUp bool) []rtp.Packet {
	n := len(au.Payloads)
	if n == 0 {
		return dst[:0]
	}
	if cap(dst) < n {
		dst = make([]rtp.Packet, n)
	}
	dst = dst[:n]

	pts32 := uint32(pts) // modulo 2^32 on purpose: RTP timestamps wrap there
	var ts uint32
	switch {
	case !s.started:
		ts = s.lastTS
		s.offset = ts - pts32
		s.started = true
	case catchUp:
		ts = s.lastTS + s.catchUpStep
		s.offset = ts - pts32
	default:
		ts = pts32 + s.offset
	}
	s.lastTS = ts

	for i, p := range au.Payloads {
		// A fresh header per packet so nothing a previous writer left in dst
		// (CSRCs, extensions, padding) leaks into this one.
		dst[i] = rtp.Packet{
			Header: rtp.Header{
				Version:        2,
				Marker:         i == n-1,
				PayloadType:    s.payloadType,
				SequenceNumber: s.seq,
				Timestamp:      ts,
				SSRC:           s.ssrc,
			},
			Payload: p,
		}
		s.seq++
	}
	return dst
}

// Padding appends n padding-only packets to dst[:0]: the next sequence
// numbers, the last timestamp, the padding bit, and payload as the
// padding itself (its last byte must be its length, at most 255). A
// receiver keeps them for the sequence's continuity and drops them
// before its depacketizer. Nothing before the first access unit.
func (s *Stamper) Padding(dst []rtp.Packet, n int, payload []byte) []rtp.Packet {
	dst = dst[:0]
	if !s.started {
		return dst
	}
	for range n {
		dst = append(dst, rtp.Packet{
			Header: rtp.Header{
				Version: 2, Padding: true, PayloadType: s.payloadType,
				SequenceNumber: s.seq, Timestamp: s.lastTS, SSRC: s.ssrc,
			},
			Payload: payload,
		})
		s.seq++
	}
	return dst
}

// NextSeq returns the sequence number the next packet will carry.
func (s *Stamper) NextSeq() uint16 { return s.seq }

// LastTimestamp returns the timestamp of the last stamped access unit, or the
// initial timestamp before the first one; sender reports pair it with the
// wall clock.
func (s *Stamper) LastTimestamp() uint32 { return s.lastTS }

// HeaderSize is the size MarshalHeader writes for h.
func HeaderSize(h *rtp.Header) int {
	if !h.Extension {
		return HeaderLen
	}
	return h.MarshalSize()
}

// MarshalHeader writes h as an RTP header into buf and returns its size
// (HeaderSize), or 0 when buf is shorter than that. CSRCs are not
// written: a Stamper never sets them. A header without extensions,
// what a Stamper makes, is written by hand; one a sender gave an
// extension (the transport-wide sequence number) is written by pion. It
// does not allocate, so an owned send path can build packets in a reused
// buffer.
func MarshalHeader(buf []byte, h *rtp.Header) int {
	if h.Extension || h.Padding {
		n, err := h.MarshalTo(buf)
		if err != nil {
			return 0
		}
		return n
	}
	if len(buf) < HeaderLen {
		return 0
	}
	buf[0] = 2 << 6
	buf[1] = h.PayloadType & 0x7F
	if h.Marker {
		buf[1] |= 0x80
	}
	binary.BigEndian.PutUint16(buf[2:4], h.SequenceNumber)
	binary.BigEndian.PutUint32(buf[4:8], h.Timestamp)
	binary.BigEndian.PutUint32(buf[8:12], h.SSRC)
	return HeaderLen
}

// MarshalTo writes p's header (as MarshalHeader does) followed by its payload
// into buf and returns the number of bytes written, or 0 when buf is too short.
func MarshalTo(buf []byte, p *rtp.Packet) int {
	n := HeaderSize(&p.Header)
	if len(buf) < n+len(p.Payload) {
		return 0
	}
	MarshalHeader(buf, &p.Header)
	return n + copy(buf[n:], p.Payload)
}
