// Package loadgen opens many WHEP sessions against a server and verifies
// that media really flows to each of them; internal/ladder builds the capacity
// ladder on top of its Pool. Its cost must stay far below the server it
// measures: most sessions run in light mode, where SRTP media packets are
// accounted from their clear RTP header at the socket and never decrypted;
// a sample of sessions decodes fully through pion to prove the pictures
// are real.
package loadgen

import "encoding/binary"

// Kind is what a datagram on a WebRTC 5-tuple is, by RFC 7983's first-byte
// demultiplexing plus RFC 5761's RTP/RTCP split on the second byte.
type Kind uint8

// Datagram kinds.
const (
	KindOther Kind = iota // anything else: passed through to pion
	KindSTUN
	KindDTLS
	KindRTP
	KindRTCP
)

func (k Kind) String() string {
	switch k {
	case KindSTUN:
		return "STUN"
	case KindDTLS:
		return "DTLS"
	case KindRTP:
		return "RTP"
	case KindRTCP:
		return "RTCP"
	}
	return "other"
}

// rtpHeaderLen is the fixed part of an RTP header (RFC 3550 §5.1).
const rtpHeaderLen = 12

// Classify tells media from the packets pion must see. It looks at two
// bytes at most, so it is safe on anything a socket returns.
func Classify(b []byte) Kind {
	if len(b) == 0 {
		return KindOther
	}
	switch c := b[0]; {
	case c <= 3:
		return KindSTUN
	case c >= 20 && c <= 63:
		return KindDTLS
	case c >= 128 && c <= 191:
		if len(b) < 2 {
			return KindOther
		}
		// RTCP packet types 192..223 occupy the second byte where RTP
		// has marker+payload type; RFC 5761 keeps RTP payload types
		// 64..95 free so that this byte tells them apart.
		if b[1] >= 192 && b[1] <= 223 {
			return KindRTCP
		}
		if len(b) < rtpHeaderLen {
			return KindOther
		}
		return KindRTP
	}
	return KindOther
}

// RTPHeader is the part of an RTP header SRTP leaves in clear that the
// light mode needs.
type RTPHeader struct {
	Marker      bool
	PayloadType uint8
	Seq         uint16
	Timestamp   uint32
	SSRC        uint32
}

// ParseRTPHeader reads the fixed header of a datagram Classify called
// KindRTP. It reports false when b is too short.
func ParseRTPHeader(b []byte) (RTPHeader, bool) {
	if len(b) < rtpHeaderLen {
		return RTPHeader{}, false
	}
	return RTPHeader{
		Marker:      b[1]&0x80 != 0,
		PayloadType: b[1] & 0x7f,
		Seq:         binary.BigEndian.Uint16(b[2:]),
		Timestamp:   binary.BigEndian.Uint32(b[4:]),
		SSRC:        binary.BigEndian.Uint32(b[8:]),
	}, true
}
