package bwe

import "time"

// A probe cluster asks the link a question the stream cannot: does it
// carry more than what the viewer is being sent? The sender sends a short
// train of extra packets at the rate in question (pkg/rtpsend's prober),
// each under its own transport-wide number, and the viewer's feedback
// says when each arrived. Where the link is narrower than the train, the
// bottleneck spaces the packets out to its own rate, so the train arrives
// slower than it left; where it is wider, it arrives as it left. (The
// idea is libwebrtc's ProbeBitrateEstimator's; the rules below are this
// package's.)

// ProbeResult is what one cluster found.
type ProbeResult struct {
	// Sent and Received are the cluster's rates, bit/s, as it left and as
	// it arrived (over the packets received); 0 when not measured.
	Sent, Received int64
	// Packets is how many packets the cluster had, Lost how many of them
	// the feedback never reported received.
	Packets, Lost int
	// Valid: enough of the cluster arrived over a measurable time to
	// read a rate from it.
	Valid bool
}

// Carries reports whether the cluster shows the link carrying bps: a
// valid result that lost at most a tenth of its packets and arrived at
// least at bps.
func (r ProbeResult) Carries(bps int64) bool {
	return r.Valid && r.Lost*10 <= r.Packets && r.Received >= bps
}

// maxProbeSpan: a cluster whose packets left or arrived further apart
// than this measured something else (a stall, a clock jump).
const maxProbeSpan = time.Second

// ProbeCluster collects the acknowledgements of one cluster's packets.
// Its owner feeds it the Acks marked Probe and serialises the calls.
type ProbeCluster struct {
	// Packets is how many packets the cluster sent.
	Packets int
	acks    []Ack
}

// Add takes one acknowledgement of a packet of the cluster; only
// packets reported received count (a packet reported lost and later
// received is acknowledged again, received).
func (c *ProbeCluster) Add(a Ack) {
	if a.Received && len(c.acks) < c.Packets {
		c.acks = append(c.acks, a)
	}
}

// Complete reports whether every packet of the cluster was acknowledged
// received.
func (c *ProbeCluster) Complete() bool { return c.Packets > 0 && len(c.acks) >= c.Packets }

// Result is the cluster's rates from what was acknowledged so far.
// Arrivals are taken by time, not by number: packets reordered on the
// way arrive in another order than they left, and the span between the
// first and the last arrival is what the link took for them. The bytes
// of the first arrival are left out of the received rate (they arrived
// at its start, before the span), those of the last departure out of the
// sent rate.
func (c *ProbeCluster) Result() ProbeResult {
	r := ProbeResult{Packets: c.Packets, Lost: max(c.Packets-len(c.acks), 0)}
	if len(c.acks) < 2 || 2*len(c.acks) < c.Packets {
		return r
	}
	first, last := c.acks[0], c.acks[0]      // by departure
	earliest, latest := c.acks[0], c.acks[0] // by arrival
	total := 0
	for _, a := range c.acks {
		total += a.Size
		if a.Sent < first.Sent {
			first = a
		}
		if a.Sent >= last.Sent {
			last = a
		}
		if a.Arrival < earliest.Arrival {
			earliest = a
		}
		if a.Arrival >= latest.Arrival {
			latest = a
		}
	}
	sendSpan, recvSpan := last.Sent-first.Sent, latest.Arrival-earliest.Arrival
	if recvSpan <= 0 || recvSpan > maxProbeSpan || sendSpan > maxProbeSpan {
		return r
	}
	r.Received = int64(float64(total-earliest.Size) * 8 / recvSpan.Seconds())
	if sendSpan > 0 {
		r.Sent = int64(float64(total-last.Size) * 8 / sendSpan.Seconds())
	}
	r.Valid = true
	return r
}
