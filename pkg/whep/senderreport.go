package whep

import (
	"time"

	"github.com/pion/rtcp"
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

// senderReporter writes a sender report at most once per interval, from
// the writer goroutine right after an access unit went out, so the RTP
// timestamp it reports is exactly the one just sent at the time just read.
type senderReporter struct {
	next time.Time
}

// maybeSend reports (ssrc, last timestamp, counts) when due. packets and
// payloadOctets are the session's totals.
func (r *senderReporter) maybeSend(sess *session, rtpTS uint32, packets, payloadOctets uint64) {
	now := time.Now()
	if now.Before(r.next) {
		return
	}
	r.next = now.Add(senderReportInterval)
	params := sess.sender.GetParameters()
	if len(params.Encodings) == 0 {
		return
	}
	sr := &rtcp.SenderReport{
		SSRC:        uint32(params.Encodings[0].SSRC),
		NTPTime:     ntpTime(now),
		RTPTime:     rtpTS,
		PacketCount: uint32(packets),
		OctetCount:  uint32(payloadOctets),
	}
	// A failed write means the transport is closing; the session's state
	// callback ends it.
	_ = sess.pc.WriteRTCP([]rtcp.Packet{sr})
}
