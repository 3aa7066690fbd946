package whepclient

import (
	"slices"
	"sync"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"
)

// AudioPacket is one received Opus packet.
type AudioPacket struct {
	Payload        []byte // the client's own copy
	RTPTimestamp   uint32
	SequenceNumber uint16
	PayloadType    uint8
	Received       time.Time
}

// audioLoop reads the audio track until the PeerConnection closes. Audio
// is only counted and handed on: its loss is the decoder's business.
func audioLoop(t *webrtc.TrackRemote, on func(AudioPacket), st *statsState) {
	buf := make([]byte, readBufSize)
	var pkt rtp.Packet
	for {
		n, _, err := t.Read(buf)
		if err != nil {
			return
		}
		st.audioPackets.Add(1)
		st.audioBytes.Add(uint64(n))
		if on == nil || pkt.Unmarshal(buf[:n]) != nil {
			continue
		}
		on(AudioPacket{
			Payload:        append([]byte(nil), pkt.Payload...),
			RTPTimestamp:   pkt.Timestamp,
			SequenceNumber: pkt.SequenceNumber,
			PayloadType:    pkt.PayloadType,
			Received:       time.Now(),
		})
	}
}

// SenderReport is a track's RTP↔NTP mapping from the server's latest
// sender report (RFC 3550 §6.4.1). Mapping both tracks through their own
// reports places video and audio on one clock, which is how a browser
// keeps them in lip sync.
type SenderReport struct {
	SSRC      uint32
	RTPTime   uint32
	NTPTime   uint64 // 32.32 fixed point seconds since 1900
	Packets   uint32
	Octets    uint32
	ClockRate uint32
	Received  time.Time
}

// ntpEpochOffset is the number of seconds from 1900 (NTP) to 1970 (Unix).
const ntpEpochOffset = 2208988800

// NTP returns the report's NTP timestamp as a time.
func (r SenderReport) NTP() time.Time {
	secs := int64(r.NTPTime>>32) - ntpEpochOffset
	frac := int64((r.NTPTime & 0xFFFFFFFF) * uint64(time.Second) >> 32)
	return time.Unix(secs, frac)
}

// At places an RTP timestamp of the track on the sender's NTP clock. The
// timestamp must lie within 2^31 ticks of the report's (about 6 hours at
// 90 kHz), which holds for any packet near the report.
func (r SenderReport) At(rtpTS uint32) time.Time {
	d := int64(int32(rtpTS - r.RTPTime))
	return r.NTP().Add(time.Duration(d * int64(time.Second) / int64(r.ClockRate)))
}

// senderReports keeps the latest report per track kind.
type senderReports struct {
	mu     sync.Mutex
	latest map[webrtc.RTPCodecType]SenderReport
	bye    map[webrtc.RTPCodecType]bool // an RTCP BYE named the track
}

// readLoop reads one receiver's RTCP until the PeerConnection closes. pion
// hands a compound packet to every track it names, so reports are matched
// to the track by SSRC.
func (s *senderReports) readLoop(rt remoteTrack) {
	kind, ssrc, clock := rt.t.Kind(), uint32(rt.t.SSRC()), rt.t.Codec().ClockRate
	for {
		pkts, _, err := rt.r.ReadRTCP()
		if err != nil {
			return
		}
		now := time.Now()
		for _, p := range pkts {
			if bye, ok := p.(*rtcp.Goodbye); ok && slices.Contains(bye.Sources, ssrc) {
				s.mu.Lock()
				if s.bye == nil {
					s.bye = map[webrtc.RTPCodecType]bool{}
				}
				s.bye[kind] = true
				s.mu.Unlock()
			}
			sr, ok := p.(*rtcp.SenderReport)
			if !ok || sr.SSRC != ssrc {
				continue
			}
			s.mu.Lock()
			if s.latest == nil {
				s.latest = map[webrtc.RTPCodecType]SenderReport{}
			}
			s.latest[kind] = SenderReport{
				SSRC: sr.SSRC, RTPTime: sr.RTPTime, NTPTime: sr.NTPTime,
				Packets: sr.PacketCount, Octets: sr.OctetCount, ClockRate: clock, Received: now,
			}
			s.mu.Unlock()
		}
	}
}

// Goodbye reports whether an RTCP BYE for the video or audio track has
// arrived. Options.SenderReports must be set.
func (s *Session) Goodbye(kind webrtc.RTPCodecType) bool {
	s.srs.mu.Lock()
	defer s.srs.mu.Unlock()
	return s.srs.bye[kind]
}

// SenderReport returns the latest sender report of the video or audio
// track, and false before one arrived. Options.SenderReports must be set.
func (s *Session) SenderReport(kind webrtc.RTPCodecType) (SenderReport, bool) {
	s.srs.mu.Lock()
	defer s.srs.mu.Unlock()
	r, ok := s.srs.latest[kind]
	return r, ok
}
