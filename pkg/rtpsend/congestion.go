package rtpsend

import (
	"time"

	"github.com/pion/rtcp"
)

// A viewer whose link is narrower than the stream cannot slow the server
// down over UDP: a write never blocks, the link drops what it cannot carry,
// and the viewer's queue in the hub never fills, so the hub's "drop to the
// next IDR" never happens by itself. The viewer then gets every frame with
// holes in it, which its decoder cannot show, for as long as it stays.
// Its RTCP receiver reports say so (browsers send one a second, pion peers
// with the default interceptors too): when they show heavy loss twice in a
// row, the session asks the hub to drop its video up to the next IDR. The
// link drains meanwhile, so the IDR and the frames after it arrive whole,
// and the viewer plays what its link can carry, a GOP head at a time.

const (
	// congestionLoss is the loss from which a window counts as heavy. A
	// link that loses a fifth of the packets is over its capacity, not
	// noisy: the random loss of a bad Wi-Fi or mobile link that NACK
	// repairs stays at a few percent (TestLossyViewerNACK runs at 5 %).
	congestionLoss = 0.20
	// congestionWindows is how many heavy windows in a row make a skip:
	// one may be a burst (a Wi-Fi scan, a handover) that NACKs repair; two
	// are sustained loss. A viewer already found congested needs one (see
	// congestion.congested).
	congestionWindows = 2
	// congestionWindowPackets is the least traffic a window is judged on.
	// Fewer packets make the ratio coarse: at 5 % random loss a window of
	// 100 packets reaches 20 % with a probability near 1e-6, and two in a
	// row practically never. A 2.5 Mbit/s stream sends about 260 packets a
	// second, so one receiver report is one window; at lower rates, or
	// from a receiver that reports more often, reports add up to one.
	congestionWindowPackets = 100
	// congestionLogEvery spaces the log lines of one congested viewer;
	// the hub's drop summary reports its frames every second anyway.
	congestionLogEvery = time.Minute
)

// congestion applies the rule to one viewer's reports about its video. It
// is owned by the session's RTCP goroutine.
//
// Windows are cut from the reports' cumulative counters (the extended
// highest sequence number and the cumulative number lost) rather than
// from each report's fraction lost, so how often a receiver reports does
// not change what a window is: browsers add reports to their feedback at
// will.
type congestion struct {
	started bool
	seq     uint32 // extended highest sequence number at the window's start
	lost    uint32 // cumulative lost (24 bits) at the window's start
	heavy   int    // heavy windows in a row

	// congested is set by a skip and cleared by the next window that is
	// not heavy. Meanwhile NACKs are not answered: retransmissions into a
	// link that is over its capacity only add to what it drops, and the
	// frames they would repair are the ones the skip gave up on. And one
	// heavy window makes the next skip: waiting for two again would skip
	// a second or more later in every GOP, and when that is just before
	// the next IDR the link has no time to drain, the IDR is lost in it
	// too, and the viewer never gets a picture (seen with a 2 s GOP and a
	// report a second, where the two fall into step).
	congested bool

	skips       uint64    // skips asked for
	loggedAt    time.Time // of the last line about them
	loggedSkips uint64    // skips at that line
}

// observe takes one reception report block about the video. It returns
// true when the viewer's video should skip to the next IDR, with the loss
// of the window that decided it.
func (c *congestion) observe(rep rtcp.ReceptionReport) (skip bool, loss float64) {
	if !c.started {
		c.started, c.seq, c.lost = true, rep.LastSequenceNumber, rep.TotalLost
		return false, 0
	}
	expected := rep.LastSequenceNumber - c.seq
	switch {
	case int32(expected) < 0:
		return false, 0 // older than a report already seen
	case expected > 1<<16:
		// The receiver restarted its counts (or lost track of ours):
		// nothing to compare with, start a new window.
		c.seq, c.lost = rep.LastSequenceNumber, rep.TotalLost
		return false, 0
	case expected < congestionWindowPackets:
		return false, 0 // the window goes on
	}
	// The cumulative count is a signed 24-bit number that a receiver may
	// lower (duplicates, late retransmissions); a window that lost "less
	// than nothing" lost nothing.
	lost := max(int32((rep.TotalLost-c.lost)<<8)>>8, 0)
	c.seq, c.lost = rep.LastSequenceNumber, rep.TotalLost
	loss = float64(lost) / float64(expected)
	if loss < congestionLoss {
		c.heavy = 0
		c.congested = false
		return false, loss
	}
	c.heavy++
	if c.heavy < congestionWindows && !c.congested {
		return false, loss
	}
	c.heavy = 0
	c.congested = true
	return true, loss
}

// idrSkipper is implemented by a Source (hub.Reader does) that can drop
// its video up to the next IDR on request; the congestion rule needs it.
type idrSkipper interface {
	SkipToIDR()
}

// OnRTCP takes the RTCP the viewer sent: NACKs go to Step, which answers
// them from the shared-payload history, receiver reports drive the
// congestion rule, and they and transport-cc feedback drive the
// bandwidth estimate (estimate.go). A compound packet may name other senders' SSRCs, so a
// NACK or a report block counts only for the video SSRC it is about. It
// must not block: on the own media plane it runs on the goroutine that
// reads every viewer's RTCP. Calls never overlap.
func (w *Sender) OnRTCP(pkts []rtcp.Packet) {
	video := w.cfg.VideoSSRC
	for _, p := range pkts {
		switch p := p.(type) {
		case *rtcp.TransportLayerNack:
			switch {
			case p.MediaSSRC != video || w.congestion.congested:
			case w.now().UnixNano() < w.nacks.closedUntil.Load():
				k := nackedPackets(p)
				w.nacks.refused.Add(k)
				w.resends.dropped.Add(k)
			default:
				w.nacks.add(p)
			}
		case *rtcp.TransportLayerCC:
			w.est.onFeedback(p, w.now(), time.Duration(w.rtt.rtt.Load()))
		case *rtcp.ReceiverReport:
			w.onReport(p.Reports)
		case *rtcp.SenderReport: // from a viewer that also sends media (RFC 3550 §6.4)
			w.onReport(p.Reports)
		}
	}
}

// onReport applies the congestion rule to the report blocks about the
// video in one RTCP packet.
func (w *Sender) onReport(reports []rtcp.ReceptionReport) {
	c := &w.congestion
	for _, rep := range reports {
		if rep.SSRC != w.cfg.VideoSSRC {
			continue
		}
		now := w.now()
		w.rtt.report(rep, now)
		w.est.onReport(rep, now, w.bytes.Load())
		skip, loss := c.observe(rep)
		sk, ok := w.cfg.Src.(idrSkipper)
		if !skip || !ok {
			continue
		}
		sk.SkipToIDR()
		c.skips++
		if c.loggedAt.IsZero() || now.Sub(c.loggedAt) >= congestionLogEvery {
			w.cfg.Log.Warn("viewer's link loses too much of the stream: its video skips to the next keyframe",
				"loss_percent", int(loss*100+0.5), "skips", c.skips-c.loggedSkips)
			c.loggedAt, c.loggedSkips = now, c.skips
		}
	}
}
