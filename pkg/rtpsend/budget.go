package rtpsend

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"
)

// A NACK is small and a retransmission is not: a receiver asking for its
// last 128 packets 500 times a second costs 0.3 Mbit/s upstream and, if
// every one is answered, hundreds of Mbit/s downstream. maxResendPerNACK
// bounds one NACK; the budget below bounds their rate. Per viewer, what is
// resent in a second is at most a share of what the viewer was sent (the
// more of the two last seconds, so the start of a window does not starve
// a lossy viewer), with a floor so a viewer of a low-rate stream can still
// repair a burst; one packet is resent at most once per round trip, since
// a receiver's second NACK for it before the first answer could arrive is
// a duplicate; and all viewers together draw on a server-wide budget
// (Resends). NACKs past the budget are dropped and counted: the viewer
// sees the loss it would see without NACKs, which its decoder handles as
// it handles any loss (a PLI, the next IDR).

const (
	// resendShare: a viewer is resent at most 1/resendShare of what it is
	// sent. 5 % random loss, already a bad link, needs 1/20; a quarter
	// leaves room for bursts and keeps an attacker's stream at 1.25×.
	resendShare = 4
	// resendFloor is the budget of a viewer whose share is smaller, in
	// bytes a second: about a burst of 25 lost packets of a low-rate
	// stream.
	resendFloor = 32 << 10
	// resendWindow is what the budget is measured over.
	resendWindow = time.Second
	// resendInterval spaces two resends of one packet while the viewer's
	// round-trip time is unknown (no receiver report on a sender report
	// yet); minResendInterval is the least spacing whatever the RTT (on
	// loopback or a LAN it is far below what a receiver's NACK timer
	// does anyway).
	resendInterval    = 100 * time.Millisecond
	minResendInterval = 10 * time.Millisecond
	// maxResendInterval caps the spacing however long the measured RTT:
	// an RTT stretched by a queue (a loaded server, a bufferbloated link)
	// must not leave a viewer whose resend was lost too without the packet
	// until its decoder gives up. The byte budget, not this spacing, is
	// what bounds a flood of repeated NACKs.
	maxResendInterval = 250 * time.Millisecond
	// budgetLogEvery spaces the lines about one viewer's dropped NACKs.
	budgetLogEvery = 10 * time.Second
)

// Resends is the server-wide side of the budget, shared by every viewer's
// sender, and its counters for the metrics. The zero value bounds nothing
// but counts.
type Resends struct {
	// maxBytes is the server-wide budget per resendWindow; 0 means none.
	maxBytes atomic.Int64

	mu    sync.Mutex
	start time.Time // of the current window
	used  int64     // bytes granted in it

	resentBytes, dropped atomic.Uint64
}

// SetMaxBitrate sets the server-wide budget in bit/s; 0 removes it.
func (r *Resends) SetMaxBitrate(bps int64) {
	r.maxBytes.Store(bps / 8 * int64(resendWindow/time.Second))
}

// grant takes n bytes (one packet) from the server-wide budget, or
// nothing if they do not fit.
func (r *Resends) grant(n int64, now time.Time) bool {
	limit := r.maxBytes.Load()
	if limit <= 0 {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.start) >= resendWindow {
		r.start, r.used = now, 0
	}
	if r.used+n > limit {
		return false
	}
	r.used += n
	return true
}

// Counts returns the bytes resent on NACKs and the NACKed packets not
// resent (asked for again within a round trip, or past a budget), for the
// life of the process.
func (r *Resends) Counts() (resentBytes, dropped uint64) {
	return r.resentBytes.Load(), r.dropped.Load()
}

// resendBudget is one viewer's side; Step owns it.
type resendBudget struct {
	start          time.Time // of the current window
	sent, prevSent int64     // original bytes in this and the previous window
	resent         int64     // bytes resent in this window
	loggedAt       time.Time
	loggedDropped  uint64 // NACKed packets not resent, at the last line
}

func (b *resendBudget) roll(now time.Time) {
	if d := now.Sub(b.start); d >= resendWindow {
		b.prevSent = b.sent
		if d >= 2*resendWindow {
			b.prevSent = 0
		}
		b.start, b.sent, b.resent = now, 0, 0
	}
}

// allowance is what the viewer may still be resent in this window.
func (b *resendBudget) allowance() int64 {
	return max(max(b.sent, b.prevSent)/resendShare, resendFloor) - b.resent
}

// end is when the current window ends: until then a viewer whose
// allowance is spent gets nothing resent.
func (b *resendBudget) end() time.Time { return b.start.Add(resendWindow) }

// nackedPackets counts the sequence numbers a NACK names.
func nackedPackets(n *rtcp.TransportLayerNack) uint64 {
	var k uint64
	for _, p := range n.Nacks {
		k += 1 + uint64(bits.OnesCount16(uint16(p.LostPackets)))
	}
	return k
}

// rttClock turns receiver reports about the video into the viewer's round
// trip: a report names the sender report it answers (LSR, the middle 32
// bits of its NTP time) and how long the receiver held it (DLSR), so the
// sender needs when it sent each one. Step notes sender reports, OnRTCP
// reads them.
type rttClock struct {
	mu   sync.Mutex
	ntp  [4]uint32
	at   [4]time.Time
	next int
	rtt  atomic.Int64 // nanoseconds; 0 while unknown
}

func (c *rttClock) sentReport(ntp uint64, now time.Time) {
	c.mu.Lock()
	c.ntp[c.next], c.at[c.next] = uint32(ntp>>16), now
	c.next = (c.next + 1) % len(c.ntp)
	c.mu.Unlock()
}

func (c *rttClock) report(rep rtcp.ReceptionReport, now time.Time) {
	if rep.LastSenderReport == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, ntp := range c.ntp {
		if ntp == rep.LastSenderReport && !c.at[i].IsZero() {
			held := time.Duration(rep.Delay) * time.Second / 65536
			if rtt := now.Sub(c.at[i]) - held; rtt > 0 {
				c.rtt.Store(int64(rtt))
			}
			return
		}
	}
}

// interval is how long a resent packet is not resent again.
func (c *rttClock) interval() time.Duration {
	rtt := time.Duration(c.rtt.Load())
	if rtt == 0 {
		return resendInterval
	}
	return min(max(rtt, minResendInterval), maxResendInterval)
}
