package bwe

import (
	"testing"
	"time"

	"github.com/pion/rtcp"
)

// linkPacket is one packet of a simulated send: when it left, its size,
// whether it belongs to the probe cluster, and (filled by shape) when it
// arrived, negative when the link dropped it.
type linkPacket struct {
	sent, arrival time.Duration
	size          int
	probe         bool
}

// sendProbeOverMedia is 2 s of a 700 kbit/s stream of 1,200-byte
// packets with, from 1 s on, a cluster of n 275-byte padding packets
// paced at probeBPS: what pkg/rtpsend's prober sends on a 360p viewer.
func sendProbeOverMedia(n int, probeBPS int64) []linkPacket {
	var pkts []linkPacket
	mediaGap := time.Second * 1200 * 8 / 700_000
	probeGap := time.Duration(float64(time.Second) * 275 * 8 / float64(probeBPS))
	m, p := time.Duration(0), time.Second
	for sent := 0; m < 2*time.Second || sent < n; {
		if sent < n && p < m {
			pkts = append(pkts, linkPacket{sent: p, size: 275, probe: true})
			p += probeGap
			sent++
			continue
		}
		pkts = append(pkts, linkPacket{sent: m, size: 1200})
		m += mediaGap
	}
	return pkts
}

// shape passes pkts through a token bucket filter as tc's tbf is: rate
// bit/s, a bucket of burst bytes (full at the start), and a queue that
// drops what would wait longer than latency.
func shape(pkts []linkPacket, rate int64, burst int, latency time.Duration) {
	tokens, at, free := float64(burst), time.Duration(0), time.Duration(0)
	for i := range pkts {
		p := &pkts[i]
		t := max(p.sent, free)
		tokens = min(float64(burst), tokens+(t-at).Seconds()*float64(rate)/8)
		at = t
		dep := t
		if need := float64(p.size) - tokens; need > 0 {
			dep += time.Duration(need * 8 / float64(rate) * float64(time.Second))
		}
		if dep-p.sent > latency {
			p.arrival = -1
			continue
		}
		tokens -= float64(p.size) - (dep-t).Seconds()*float64(rate)/8
		at, free = dep, dep
		p.arrival = dep + 20*time.Millisecond // the path's own delay
	}
}

// feedbackFor is the transport-cc feedback on pkts, numbered from 0:
// what a receiver sends about them, as pion's rtcp structure holds it.
func feedbackFor(pkts []linkPacket) *rtcp.TransportLayerCC {
	fb := &rtcp.TransportLayerCC{PacketStatusCount: uint16(len(pkts))}
	ref := time.Duration(-1)
	for _, p := range pkts {
		if p.arrival >= 0 && (ref < 0 || p.arrival < ref) {
			ref = p.arrival
		}
	}
	fb.ReferenceTime = uint32(ref / (64 * time.Millisecond))
	cur := time.Duration(fb.ReferenceTime) * 64 * time.Millisecond
	var chunk *rtcp.StatusVectorChunk
	for _, p := range pkts {
		if chunk == nil || len(chunk.SymbolList) == 7 {
			chunk = &rtcp.StatusVectorChunk{SymbolSize: rtcp.TypeTCCSymbolSizeTwoBit}
			fb.PacketChunks = append(fb.PacketChunks, chunk)
		}
		if p.arrival < 0 {
			chunk.SymbolList = append(chunk.SymbolList, rtcp.TypeTCCPacketNotReceived)
			continue
		}
		d := p.arrival - cur
		sym := uint16(rtcp.TypeTCCPacketReceivedSmallDelta)
		if d < 0 || d > 63*time.Millisecond {
			sym = rtcp.TypeTCCPacketReceivedLargeDelta
		}
		chunk.SymbolList = append(chunk.SymbolList, sym)
		fb.RecvDeltas = append(fb.RecvDeltas, &rtcp.RecvDelta{Type: sym, Delta: int64(d / time.Microsecond)})
		cur = p.arrival
	}
	return fb
}

// probeThrough logs pkts as sent, decodes the feedback on them through
// the send log as a viewer's sender does, and returns the cluster's
// result.
func probeThrough(t *testing.T, pkts []linkPacket) ProbeResult {
	t.Helper()
	var log SendLog
	c := ProbeCluster{}
	for i, p := range pkts {
		if p.probe {
			log.RecordProbe(uint16(i), p.sent, p.size)
			c.Packets++
		} else {
			log.Record(uint16(i), p.sent, p.size)
		}
	}
	media := 0
	for _, a := range log.Acks(feedbackFor(pkts), nil) {
		if a.Probe {
			c.Add(a)
		} else if a.Received {
			media++
		}
	}
	if media == 0 {
		t.Fatal("no media packet acknowledged: the feedback is not what the test meant")
	}
	return c.Result()
}

// The 360p viewer's probe for the 2.5 Mbit/s source: a cluster at 1.25
// times that, 30 kB, through tbf links of 1 and 4 Mbit/s (a 16 kB bucket,
// 200 ms of queue).
func TestProbeClusterNarrowAndWide(t *testing.T) {
	const rung, probeRate, n = 2_500_000, 3_125_000, 110
	for _, tc := range []struct {
		link    int64
		carries bool
	}{{1_000_000, false}, {4_000_000, true}} {
		pkts := sendProbeOverMedia(n, probeRate)
		shape(pkts, tc.link, 16<<10, 200*time.Millisecond)
		r := probeThrough(t, pkts)
		t.Logf("link %.1f Mbit/s: cluster sent at %.2f Mbit/s, arrived at %.2f Mbit/s, %d of %d lost",
			float64(tc.link)/1e6, float64(r.Sent)/1e6, float64(r.Received)/1e6, r.Lost, r.Packets)
		if !r.Valid || r.Lost != 0 {
			t.Fatalf("link %d: %+v; want a valid result with nothing lost (the queue holds the cluster)", tc.link, r)
		}
		if r.Sent < probeRate*9/10 || r.Sent > probeRate*11/10 {
			t.Errorf("link %d: send rate %d, want about %d", tc.link, r.Sent, probeRate)
		}
		if got := r.Carries(rung * 11 / 10); got != tc.carries {
			t.Errorf("link %d: Carries(1.1 × %d) = %v, want %v (arrived at %d)", tc.link, rung, got, tc.carries, r.Received)
		}
		if !tc.carries && r.Received > 2*tc.link {
			t.Errorf("link %d: arrived at %d, more than twice the link's rate", tc.link, r.Received)
		}
	}
}

// A bucket larger than the cluster lets it through at its send rate:
// what a probe cannot see, and why the prober's clusters are not small.
func TestProbeClusterInsideBucket(t *testing.T) {
	pkts := sendProbeOverMedia(20, 3_125_000)
	shape(pkts, 1_000_000, 32<<10, 200*time.Millisecond)
	r := probeThrough(t, pkts)
	if !r.Carries(2_750_000) {
		t.Fatalf("20 packets inside a full 32 kB bucket: %+v; want them through at their send rate", r)
	}
}

func TestProbeClusterLoss(t *testing.T) {
	pkts := sendProbeOverMedia(40, 3_125_000)
	shape(pkts, 4_000_000, 16<<10, 200*time.Millisecond)
	dropped := 0
	for i := len(pkts) - 1; i >= 0 && dropped < 5; i-- {
		if pkts[i].probe {
			pkts[i].arrival = -1
			dropped++
		}
	}
	r := probeThrough(t, pkts)
	if !r.Valid || r.Lost != 5 || r.Packets != 40 {
		t.Fatalf("5 of 40 lost: %+v", r)
	}
	if r.Carries(2_750_000) {
		t.Errorf("a cluster that lost an eighth of its packets carries: %+v", r)
	}
	// Most of it lost: no rate at all.
	for i := range pkts {
		if pkts[i].probe && i%4 != 0 {
			pkts[i].arrival = -1
		}
	}
	if r := probeThrough(t, pkts); r.Valid {
		t.Errorf("three quarters lost: %+v, want no valid result", r)
	}
}

// Reordering on the way changes the order of arrival, not the span the
// link took for the cluster.
func TestProbeClusterReordered(t *testing.T) {
	pkts := sendProbeOverMedia(40, 3_125_000)
	shape(pkts, 1_000_000, 4<<10, 200*time.Millisecond)
	inOrder := probeThrough(t, pkts)
	var idx []int
	for i, p := range pkts {
		if p.probe {
			idx = append(idx, i)
		}
	}
	// The first probe packet arrives after the second, and one in the
	// middle after its successor.
	for _, k := range []int{0, 20} {
		a, b := idx[k], idx[k+1]
		pkts[a].arrival, pkts[b].arrival = pkts[b].arrival, pkts[a].arrival
	}
	r := probeThrough(t, pkts)
	if !r.Valid || r.Lost != 0 {
		t.Fatalf("reordered: %+v", r)
	}
	if diff := r.Received - inOrder.Received; diff < -inOrder.Received/50 || diff > inOrder.Received/50 {
		t.Errorf("reordered cluster arrived at %d, in order at %d", r.Received, inOrder.Received)
	}
	if r.Received > 1_500_000 {
		t.Errorf("through 1 Mbit/s, reordered: %d", r.Received)
	}
}
