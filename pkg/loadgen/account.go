package loadgen

import "sync/atomic"

// counters are written by one socket-reading goroutine and read by
// snapshots from anywhere; atomics keep the per-packet path lock-free.
type counters struct {
	packets, bytes, frames   atomic.Uint64
	gaps, reordered, dups    atomic.Uint64
	ssrcChanges              atomic.Uint64
	firstPacket, lastPacket  atomic.Int64 // unix nanoseconds, 0 = none
	rtcp, stun, dtls, others atomic.Uint64
	passDrops                atomic.Uint64 // datagrams for pion lost to a full queue
}

// seqWindow tracks which of the last 64 sequence numbers arrived, so a late
// packet (reordering) can be told from a duplicate without allocating.
type seqWindow struct {
	started bool
	highest uint16
	seen    uint64 // bit i set: highest-i arrived
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

// accountant classifies the datagrams of one session and counts its RTP
// media from the clear header. It belongs to the one goroutine that reads
// the session's socket (the reactor), which owns seq and ssrc; only the
// counters are shared.
type accountant struct {
	c        *counters
	swallow  bool // light mode: media never reaches pion
	seq      seqWindow
	ssrc     uint32
	haveSSRC bool
}

// inspect accounts for one datagram and reports whether pion must get it:
// always for STUN, DTLS and RTCP (ICE consent, the DTLS handshake and
// sender reports keep working), for media only in decode mode.
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
	if c.firstPacket.Load() == 0 {
		c.firstPacket.Store(now)
	}
	c.lastPacket.Store(now)
	c.packets.Add(1)
	c.bytes.Add(uint64(len(p)))
	if a.haveSSRC && h.SSRC != a.ssrc {
		// A new stream (the server restarted its sender); its numbers
		// are unrelated to the old ones.
		c.ssrcChanges.Add(1)
		a.seq = seqWindow{}
	}
	a.ssrc, a.haveSSRC = h.SSRC, true
	missing, late, dup := a.seq.push(h.Seq)
	switch {
	case dup:
		c.dups.Add(1)
		return !a.swallow
	case late:
		c.reordered.Add(1)
	}
	if missing > 0 {
		c.gaps.Add(uint64(missing))
	} else if missing < 0 {
		c.gaps.Add(^uint64(0)) // a late packet filled a counted gap
	}
	if h.Marker {
		c.frames.Add(1)
	}
	return !a.swallow
}
