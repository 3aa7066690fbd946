package loadgen

import (
	"sync/atomic"
	"time"
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

// seqWindow tracks which of the last 64 sequence numbers arrived, so a late
// packet (reordering) can be told from a duplicate without allocating.
type seqWindow struct {
	started bool
	highest uint16
	seen    uint64 // bit i set: highest-i arrived
}

// has tells whether seq arrived, and whether it is still within the
// window at all (older numbers are forgotten).
func (w *seqWindow) has(seq uint16) (arrived, inWindow bool) {
	if !w.started {
		return false, false
	}
	back := int(int16(w.highest - seq))
	if back < 0 || back >= 64 {
		return false, false
	}
	return w.seen&(1<<uint(back)) != 0, true
}

// push returns the change in the number of missing packets and whether the
// packet was late or a duplicate.
func (w *seqWindow) push(seq uint16) (missing int, late, dup bool) {
	if !w.started {
		// Numbers before the first packet were never expected.
		w.started, w.highest, w.seen = true, seq, ^uint64(0)
		return 0, false, false
	}
	d := int(int16(seq - w.highest)) // wrap-around 65535→0 is a step forward
	switch {
	case d > 0:
		if d >= 64 {
			w.seen = 0
		} else {
			w.seen <<= uint(d)
		}
		w.seen |= 1
		w.highest = seq
		return d - 1, false, false
	case d == 0:
		return 0, false, true
	}
	back := -d
	if back >= 64 {
		return 0, true, false // counted missing long ago; stays so
	}
	bit := uint64(1) << uint(back)
	if w.seen&bit != 0 {
		return 0, false, true
	}
	w.seen |= bit
	return -1, true, false
}

// rtpStream is the receive state of one track: audio and video have their
// own SSRC and sequence space, so each needs its own window.
type rtpStream struct {
	seq      seqWindow
	ssrc     uint32
	haveSSRC bool

	// What a receiver report says (RFC 3550 A.3, A.8).
	cycles      uint32 // sequence number wraps, in the upper 16 bits
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
	prev, started := s.seq.highest, s.seq.started
	missing, late, dup = s.seq.push(h.Seq)
	if started && !late && !dup && h.Seq < prev {
		s.cycles += 1 << 16
	}
	s.lost += int64(missing)
	return missing, late, dup, newSSRC
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
