package rtpsend

import (
	"time"

	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// opusStamper holds one viewer's RTP state for the audio track. Each
// AudioFrame is one Opus packet (RFC 7587), so there is nothing to cut:
// the packet shares the frame's Data, read-only, with every viewer.
type opusStamper struct {
	ssrc   uint32
	pt     uint8
	seq    uint16
	offset uint32
	lastTS uint32
	// lastPTS is the PTS of lastTS, for the sender report.
	lastPTS int64
}

// stamp returns the RTP packet of af. Its timestamp is the PTS on the
// 48 kHz Opus clock plus the viewer's offset, never a running sample
// count: a frame the hub dropped then leaves a gap the decoder conceals,
// instead of shifting all later sound against the picture. Sequence
// numbers stay contiguous across drops, so a drop triggers no NACK.
//
// pts is af's PTS on the session's timeline (see timeline), which differs
// from af.PTS once a second publisher continues the stream.
func (o *opusStamper) stamp(af *av.AudioFrame, pts int64) rtp.Packet {
	ts := uint32(pts*av.OpusClockRate/av.ClockRate) + o.offset
	o.lastTS, o.lastPTS = ts, pts
	p := rtp.Packet{
		Header: rtp.Header{
			Version:        2,
			PayloadType:    o.pt,
			SequenceNumber: o.seq,
			Timestamp:      ts,
			SSRC:           o.ssrc,
		},
		Payload: af.Data,
	}
	o.seq++
	return p
}

// sendAudio writes one Opus frame on the audio track and, once the clock
// is anchored at the live edge, the track's sender report when one is due.
// A sender without audio never gets audio frames (its reader is attached
// for video only); it ignores them all the same.
func (w *Sender) sendAudio(af *av.AudioFrame, pts int64, now time.Time) {
	o := &w.audio
	if o.ssrc == 0 {
		return
	}
	pkt := o.stamp(af, pts)
	if w.est.audio {
		w.audioOne[0] = pkt
		w.est.stamp(w.audioOne[:], now)
		pkt = w.audioOne[0]
		w.audioOne[0] = rtp.Packet{} // the payload is the path's
	}
	// A write error means the connection is going away, which ends the
	// session by itself.
	if w.cfg.Out.WriteAudio(&pkt) != nil {
		return
	}
	n := uint64(w.est.headerLen(true) + len(af.Data))
	w.packets.Add(1)
	w.bytes.Add(n)
	w.cfg.Src.CountSent(1, int(n))
	w.audioReports.sent(1, uint64(len(af.Data)))
	if w.clock.set {
		w.audioReports.maybeSend(w.cfg.Out, now, o.lastTS, w.clock.at(o.lastPTS))
	}
}
