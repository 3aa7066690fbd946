package rtpsend

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/pion/rtcp"

	"github.com/srtwhep/srtwhep/pkg/bwe"
)

// ackAll is transport-cc feedback on transport numbers first..first+n-1,
// the k-th arriving at arrival(k) (negative: lost), in 250 µs units as
// a receiver reports them.
func ackAll(first uint16, n int, arrival func(k int) time.Duration) *rtcp.TransportLayerCC {
	fb := &rtcp.TransportLayerCC{MediaSSRC: 1, BaseSequenceNumber: first, PacketStatusCount: uint16(n), ReferenceTime: 10}
	cur := 640 * time.Millisecond
	var chunk *rtcp.StatusVectorChunk
	for k := range n {
		if chunk == nil || len(chunk.SymbolList) == 7 {
			chunk = &rtcp.StatusVectorChunk{SymbolSize: rtcp.TypeTCCSymbolSizeTwoBit}
			fb.PacketChunks = append(fb.PacketChunks, chunk)
		}
		at := arrival(k)
		if at < 0 {
			chunk.SymbolList = append(chunk.SymbolList, rtcp.TypeTCCPacketNotReceived)
			continue
		}
		at = 640*time.Millisecond + at.Truncate(250*time.Microsecond)
		chunk.SymbolList = append(chunk.SymbolList, rtcp.TypeTCCPacketReceivedSmallDelta)
		fb.RecvDeltas = append(fb.RecvDeltas, &rtcp.RecvDelta{Type: rtcp.TypeTCCPacketReceivedSmallDelta, Delta: int64((at - cur) / time.Microsecond)})
		cur = at
	}
	return fb
}

// TestProbeCluster: a cluster asked for at 3.125 Mbit/s goes out as
// padding-only packets on the video SSRC, paced over about 80 ms, each
// under its own transport-wide number and the next video sequence
// numbers; feedback spacing them as a 1 Mbit/s link would gives a result
// near 1 Mbit/s, which GCC never sees; the next cluster waits ProbeEvery;
// a lost padding packet NACKed is resent as padding.
func TestProbeCluster(t *testing.T) {
	src, out := &fakeSource{}, &wireOutput{}
	s := New(Config{Out: out, Src: src, VideoSSRC: 1, VideoPT: 102,
		Session: context.Background(), Log: slog.New(slog.DiscardHandler), OnEnd: func(error) {}, TransportCC: 3})
	s.SetWake(func() {})
	clock := time.Now()
	s.now = func() time.Time { return clock }
	if s.Probe(3_125_000) {
		t.Fatal("a cluster before any video was accepted")
	}
	src.push(picture(0, true, false))
	s.Step(clock)
	video := len(out.pkts)
	lastVideo := out.pkts[video-1]
	if !s.Probe(3_125_000) {
		t.Fatal("Probe refused")
	}
	if s.Probe(3_125_000) {
		t.Fatal("a second cluster accepted while the first is under way")
	}
	start := clock
	for i := 0; i < 400 && (s.probe.active || s.probe.want.Load() != 0); i++ {
		at, _ := s.Step(clock)
		if at.IsZero() {
			break
		}
		clock = at
	}
	probe := out.pkts[video:]
	took := clock.Sub(start)
	if len(probe) < 100 || len(probe) > 120 {
		t.Fatalf("%d probe packets, want about 110 (30 kB of 283-byte packets)", len(probe))
	}
	if took < 70*time.Millisecond || took > 90*time.Millisecond {
		t.Errorf("cluster took %v, want about 80 ms", took)
	}
	firstTCC := tccSeq(&probe[0])
	for i, p := range probe {
		if !p.Padding || len(p.Payload) != 0 || p.PaddingSize != 255 || p.SSRC != 1 || p.Marker ||
			p.SequenceNumber != lastVideo.SequenceNumber+uint16(i+1) || p.Timestamp != lastVideo.Timestamp ||
			tccSeq(&p) != firstTCC+i {
			t.Fatalf("probe packet %d: %+v; want padding only, the video's next sequence number and its last timestamp", i, p.Header)
		}
	}
	if _, ok := s.ProbeResult(); ok {
		t.Fatal("a result before any feedback")
	}
	// Through 1 Mbit/s: 283 bytes every 2.26 ms.
	gap := time.Duration(float64(time.Second) * 283 * 8 / 1e6)
	s.OnRTCP([]rtcp.Packet{ackAll(uint16(firstTCC), len(probe), func(k int) time.Duration { return time.Duration(k) * gap })})
	r, ok := s.ProbeResult()
	if !ok {
		t.Fatal("no result with every packet acknowledged")
	}
	t.Logf("cluster: %+v", r)
	if !r.Valid || r.Lost != 0 || r.Received < 900_000 || r.Received > 1_100_000 || r.Sent < 2_800_000 || r.Sent > 3_400_000 {
		t.Errorf("result %+v; want sent at about 3.1 Mbit/s, arrived at about 1 Mbit/s", r)
	}
	if e := s.Estimate(); e.Source == bwe.SourceTransportCC {
		t.Errorf("GCC estimated %+v from the probe alone", e)
	}
	if s.Probe(3_125_000) {
		t.Error("a second cluster within ProbeEvery")
	}
	clock = clock.Add(ProbeEvery)
	if !s.Probe(3_125_000) {
		t.Error("no cluster after ProbeEvery")
	}

	// A padding packet NACKed is resent as one.
	n := len(out.pkts)
	s.OnRTCP([]rtcp.Packet{&rtcp.TransportLayerNack{MediaSSRC: 1,
		Nacks: rtcp.NackPairsFromSequenceNumbers([]uint16{probe[5].SequenceNumber})}})
	s.resendNACKed(clock)
	if len(out.pkts) != n+1 || !out.pkts[n].Padding || out.pkts[n].SequenceNumber != probe[5].SequenceNumber {
		t.Errorf("NACKed padding packet: %d resent", len(out.pkts)-n)
	}
}

// Without transport-cc there is nothing to read a cluster with.
func TestProbeNeedsTransportCC(t *testing.T) {
	src, out := &fakeSource{}, &wireOutput{}
	s := New(Config{Out: out, Src: src, VideoSSRC: 1, VideoPT: 102,
		Session: context.Background(), Log: slog.New(slog.DiscardHandler), OnEnd: func(error) {}})
	s.SetWake(func() {})
	src.push(picture(0, true, false))
	s.Step(time.Now())
	if s.Probe(3_000_000) {
		t.Fatal("a cluster without transport-cc")
	}
}
