package loadgen

import (
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/internal/rtpseq"
)

// stallGap is the pause between two video frames that counts as a stall:
// close to the freeze a browser's WebRTC stats count at 30 fps (a frame
// later than max(3 frame intervals, the mean plus 150 ms)). The catch-up
// burst at join and a skip to the next IDR both show up here, as they do
// on a screen.
const stallGap = 200 * time.Millisecond

// counters are written by one socket-reading goroutine and read by
// snapshots from anywhere; atomics keep the per-packet path lock-free.
// The unprefixed media counters are the video track's: verification and
// the ladder's headline are about video, and audio is judged on its own.
type counters struct {
	packets, bytes, frames   atomic.Uint64
	gaps, reordered, dups    atomic.Uint64
	ssrcChanges              atomic.Uint64
	firstPacket, lastPacket  atomic.Int64 // unix nanoseconds, 0 = none
	rtcp, stun, dtls, others atomic.Uint64
	passDrops                atomic.Uint64 // datagrams for pion lost to a full queue
	stalls                   atomic.Uint64 // video pauses longer than stallGap

	// Feedback a light viewer sent (feedback.go).
	reportsSent, nackedSent, plisSent atomic.Uint64
	rtcpUnsent                        atomic.Uint64 // built but not sent: session not connected, write failed, queue full

	audioPackets, audioBytes atomic.Uint64
	audioGaps, audioDups     atomic.Uint64
	audioFirst               atomic.Int64 // unix nanoseconds, 0 = none

	// audioPT holds the payload types the server's answer gave its audio
	// m-section. It is written from the dialling goroutine while the
	// reactor may already read the socket, hence atomic.
	audioPT ptSet
	// audioAnswered: the answer accepted our audio m-section.
	audioAnswered atomic.Bool
}

// ptSet is a set of RTP payload types (0..127) readable per packet without
// a lock.
type ptSet struct{ bits [2]atomic.Uint64 }

func (s *ptSet) add(pt uint8) {
	pt &= 0x7f
	s.bits[pt>>6].Or(1 << (pt & 63))
}

func (s *ptSet) has(pt uint8) bool {
	pt &= 0x7f
	return s.bits[pt>>6].Load()&(1<<(pt&63)) != 0
}

// rtpStream is the receive state of one track: audio and video have their
// own SSRC and sequence space, so each needs its own window.
type rtpStream struct {
	seq      rtpseq.Window
	ssrc     uint32
	haveSSRC bool

	// What a receiver report says (RFC 3550 A.3, A.8).
	lost        int64  // gaps opened minus gaps filled late
	priorExt    uint32 // extended highest sequence number at the last report
	priorLost   int64  // lost at the last report
	jitter      uint32 // interarrival jitter ×16, RTP timestamp units
	transit     int32
	haveTransit bool
}

// push accounts a packet of this stream and returns the change in missing
// packets, whether it was late or a duplicate, and whether the SSRC
// changed (the server restarted its sender; the numbers start afresh).
func (s *rtpStream) push(h RTPHeader) (missing int, late, dup, newSSRC bool) {
	if s.haveSSRC && h.SSRC != s.ssrc {
		newSSRC = true
		*s = rtpStream{}
	}
	if !s.haveSSRC {
		// The first report's interval starts just before this packet.
		s.priorExt = uint32(h.Seq) - 1
	}
	s.ssrc, s.haveSSRC = h.SSRC, true
	r := s.seq.Push(h.Seq)
	missing = r.Delta()
	s.lost += int64(missing)
	return missing, r.Late, r.Dup, newSSRC
}

// addGaps applies a change in missing packets to a gap counter.
func addGaps(c *atomic.Uint64, missing int) {
	if missing > 0 {
		c.Add(uint64(missing))
	} else if missing < 0 {
		c.Add(^uint64(0)) // a late packet filled a counted gap
	}
}

// accountant classifies the datagrams of one session and counts its RTP
// media from the clear header. It belongs to the one goroutine that reads
// the session's socket (the reactor), which owns the stream state; only
// the counters are shared.
type accountant struct {
	c            *counters
	swallow      bool // light mode: media never reaches pion
	video, audio rtpStream
	lastFrame    int64     // unix ns of the last video frame's end, for stalls
	fb           *feedback // nil: the viewer sends no RTCP of its own
}

// inspect accounts for one datagram that arrived at now (unix ns) and
// reports whether pion must get it: always for STUN, DTLS and RTCP (ICE
// consent, the DTLS handshake and sender reports keep working), for media
// only in decode mode.
func (a *accountant) inspect(p []byte, now int64) bool {
	c := a.c
	switch Classify(p) {
	case KindRTP:
	case KindRTCP:
		c.rtcp.Add(1)
		return true
	case KindSTUN:
		c.stun.Add(1)
		return true
	case KindDTLS:
		c.dtls.Add(1)
		return true
	default:
		c.others.Add(1)
		return true
	}
	h, _ := ParseRTPHeader(p)
	// The payload type is in clear and the answer bound it to one
	// m-section, so it tells the kinds apart without decrypting.
	if c.audioPT.has(h.PayloadType) {
		a.inspectAudio(h, len(p), now)
		return !a.swallow
	}
	if c.firstPacket.Load() == 0 {
		c.firstPacket.Store(now)
	}
	c.lastPacket.Store(now)
	c.packets.Add(1)
	c.bytes.Add(uint64(len(p)))
	missing, late, dup, newSSRC := a.video.push(h)
	if newSSRC {
		c.ssrcChanges.Add(1)
		a.lastFrame = 0
		if a.fb != nil {
			a.fb.nPending = 0
		}
	}
	switch {
	case dup:
		c.dups.Add(1)
		return !a.swallow
	case late:
		c.reordered.Add(1)
	default:
		if a.fb != nil {
			a.video.updateJitter(now, h.Timestamp, videoClockRate)
			if missing > 0 {
				a.fb.lost(h.Seq, missing)
			}
		}
	}
	addGaps(&c.gaps, missing)
	if h.Marker {
		c.frames.Add(1)
		if !late {
			if a.lastFrame != 0 && now-a.lastFrame > int64(stallGap) {
				c.stalls.Add(1)
			}
			a.lastFrame = now
		}
	}
	return !a.swallow
}

func (a *accountant) inspectAudio(h RTPHeader, n int, now int64) {
	c := a.c
	if c.audioFirst.Load() == 0 {
		c.audioFirst.Store(now)
	}
	c.audioPackets.Add(1)
	c.audioBytes.Add(uint64(n))
	missing, late, dup, newSSRC := a.audio.push(h)
	if newSSRC {
		c.ssrcChanges.Add(1)
	}
	if dup {
		c.audioDups.Add(1)
		return
	}
	if !late && a.fb != nil {
		a.audio.updateJitter(now, h.Timestamp, audioClockRate)
	}
	addGaps(&c.audioGaps, missing)
}
