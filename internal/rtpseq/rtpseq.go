// Package rtpseq follows the 16-bit sequence numbers of one RTP stream:
// it extends them past their wrap to 64 bits and remembers which of the
// last 64 arrived, so a receiver can count loss and tell a late packet
// (reordering, a NACK's retransmission) from a duplicate without
// allocating per packet. The WHEP client and the load generator's light
// viewers both account their packets with it.
package rtpseq

// Size is how many of the latest sequence numbers a Window remembers.
const Size = 64

// Window is the state of one stream's sequence numbers. The zero value
// expects the first packet; a Window is not safe for concurrent use.
type Window struct {
	started bool
	highest uint16
	cycles  uint64 // wraps of highest, ×65536
	seen    uint64 // bit i set: highest-i arrived
}

// Result is what one packet did to the window.
type Result struct {
	Missing   int  // numbers this packet skipped: a new gap
	Late      bool // arrived after a higher number
	Recovered bool // late, and it filled a gap counted missing
	Dup       bool // its number had already arrived
}

// Delta is the change in the number of packets missing: the gap the
// packet opened, or -1 when it filled one.
func (r Result) Delta() int {
	if r.Recovered {
		return -1
	}
	return r.Missing
}

// Push accounts the packet numbered seq.
func (w *Window) Push(seq uint16) Result {
	if !w.started {
		// Numbers before the first packet were never expected, so mark
		// them seen: a late one is then a duplicate, never a recovery.
		w.started, w.highest, w.seen = true, seq, ^uint64(0)
		return Result{}
	}
	// The int16 difference makes the wrap from 65535 to 0 a step forward.
	d := int(int16(seq - w.highest))
	switch {
	case d > 0:
		if d >= Size {
			w.seen = 0
		} else {
			w.seen <<= uint(d)
		}
		w.seen |= 1
		if seq < w.highest {
			w.cycles += 1 << 16
		}
		w.highest = seq
		return Result{Missing: d - 1}
	case d == 0:
		return Result{Dup: true}
	}
	back := -d
	if back >= Size {
		// Too old to know: it was counted missing when skipped and stays so.
		return Result{Late: true}
	}
	bit := uint64(1) << uint(back)
	if w.seen&bit != 0 {
		return Result{Dup: true}
	}
	w.seen |= bit
	return Result{Late: true, Recovered: true}
}

// Has tells whether seq arrived, and whether it is still within the
// window at all (older numbers are forgotten), e.g. for a NACK still due.
func (w *Window) Has(seq uint16) (arrived, inWindow bool) {
	if !w.started {
		return false, false
	}
	back := int(int16(w.highest - seq))
	if back < 0 || back >= Size {
		return false, false
	}
	return w.seen&(1<<uint(back)) != 0, true
}

// Extended is the highest sequence number received with its wraps
// counted above the low 16 bits (RFC 3550 A.1); a receiver report carries
// its low 32 bits. It is 0 before the first packet.
func (w *Window) Extended() uint64 { return w.cycles | uint64(w.highest) }
