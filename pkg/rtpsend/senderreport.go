package rtpsend

import (
	"time"

	"github.com/pion/rtcp"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// senderReportInterval follows RFC 3550's usual period; receivers use the
// reports for RTT and to map RTP time to wall-clock time.
const senderReportInterval = time.Second

// ntpEpochOffset is the number of seconds from 1900 (NTP) to 1970 (Unix).
const ntpEpochOffset = 2208988800

// ntpTime converts t to the 64-bit NTP format of sender reports.
func ntpTime(t time.Time) uint64 {
	secs := uint64(t.Unix()) + ntpEpochOffset
	frac := uint64(t.Nanosecond()) << 32 / uint64(time.Second)
	return secs<<32 | frac
}

// mediaClock maps PTS to one wall clock per session, shared by the sender
// reports of both tracks. A receiver keeps lip sync by placing each
// track's RTP time on the NTP clock its reports give (RFC 3550 §6.4.1);
// deriving both from the same PTS anchor puts a video frame and an audio
// frame of equal PTS at the same NTP time, whatever each track's random
// RTP offset and whenever each report is sent.
type mediaClock struct {
	set  bool
	pts  int64
	wall time.Time
}

// anchor fixes the mapping at the first live frame, so NTP times follow
// the real clock at the live edge; later calls do nothing.
func (c *mediaClock) anchor(pts int64, now time.Time) {
	if !c.set {
		c.set, c.pts, c.wall = true, pts, now
	}
}

// at is the wall time of pts. Split into whole seconds and a remainder so
// long sessions cannot overflow time.Duration arithmetic.
func (c *mediaClock) at(pts int64) time.Time {
	d := pts - c.pts
	secs, rem := d/av.ClockRate, d%av.ClockRate
	return c.wall.Add(time.Duration(secs)*time.Second + time.Duration(rem)*time.Second/av.ClockRate)
}

// senderReporter writes one track's sender reports, at most once per
// interval, from Step right after a frame went out, so the RTP timestamp
// it reports is exactly one just sent.
type senderReporter struct {
	ssrc    uint32
	next    time.Time
	packets uint64 // this track's totals, for the report's counts
	octets  uint64 // payload bytes
}

// sent adds a frame's packets and payload bytes to the track's totals.
func (r *senderReporter) sent(packets, payloadOctets uint64) {
	r.packets += packets
	r.octets += payloadOctets
}

// maybeSend reports that rtpTS is at wall time when a report is due; it
// returns the report's NTP time and whether it sent one.
func (r *senderReporter) maybeSend(tr Output, now time.Time, rtpTS uint32, at time.Time) (ntp uint64, sent bool) {
	if now.Before(r.next) {
		return 0, false
	}
	r.next = now.Add(senderReportInterval)
	sr := &rtcp.SenderReport{
		SSRC:        r.ssrc,
		NTPTime:     ntpTime(at),
		RTPTime:     rtpTS,
		PacketCount: uint32(r.packets),
		OctetCount:  uint32(r.octets),
	}
	// A failed write means the connection is closing, which ends the
	// session by itself.
	_ = tr.WriteRTCP([]rtcp.Packet{sr})
	return sr.NTPTime, true
}
