package whepclient

import (
	"bytes"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h265"
)

// RFC 7798 payload header types and the H.265 NAL unit types a viewer
// looks at.
const (
	h265AP  = 48
	h265FU  = 49
	h265SPS = 33
)

func h265Type(b byte) byte { return (b >> 1) & 0x3f }

// h265IRAP: BLA, IDR and CRA (16-23), where a decoder can start.
func h265IRAP(t byte) bool { return t >= 16 && t <= 23 }

// startsKey reports whether a payload starts a keyframe of the track's
// codec; only NAL headers are looked at.
func (r *receiver) startsKey(p []byte) bool {
	if !r.h265 {
		return startsIDR(p)
	}
	if len(p) < 3 {
		return false
	}
	switch t := h265Type(p[0]); t {
	case h265AP:
		// The parameter sets in front of an IRAP picture: aggregated
		// with its first slice or alone, they start the keyframe.
		return true
	case h265FU:
		return p[2]&0x80 != 0 && h265IRAP(p[2]&0x3f)
	default:
		return h265IRAP(t) || t == h265SPS
	}
}

// assembleH265 adds one RFC 7798 payload to the picture being rebuilt.
func (r *receiver) assembleH265(payload []byte) {
	a := &r.asm
	// Cloned: the depacketizer keeps the fragments of a NAL unit until
	// its last one comes, and payload is the read buffer, overwritten by
	// the next packet.
	out, err := a.depack265.Unmarshal(bytes.Clone(payload))
	if err != nil {
		r.log.Debug("bad H.265 RTP payload", "err", err)
		a.broken = true
		return
	}
	var annexB h264.AnnexB
	if len(out) == 0 {
		return // a fragment in the middle of a NAL unit
	}
	if err := annexB.Unmarshal(out); err != nil {
		r.log.Debug("bad H.265 RTP payload", "err", err)
		a.broken = true
		return
	}
	a.nalus = append(a.nalus, annexB...)
}

// describeH265 marks an IRAP picture and takes the size from its SPS.
func (r *receiver) describeH265(au *AccessUnit) {
	for _, n := range au.NALUs {
		if len(n) < 2 {
			continue
		}
		switch t := h265Type(n[0]); {
		case h265IRAP(t):
			au.IDR = true
		case t == h265SPS && !bytes.Equal(n, r.asm.lastSPS):
			var sps h265.SPS
			if err := sps.Unmarshal(n); err != nil {
				r.log.Warn("cannot parse H.265 SPS", "err", err)
				continue
			}
			r.asm.lastSPS = bytes.Clone(n)
			r.st.setSize(sps.Width(), sps.Height())
		}
	}
}
