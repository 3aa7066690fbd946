package loadgen

import (
	"slices"
	"testing"
	"time"

	"github.com/pion/rtcp"
)

const (
	videoSSRC = 0x11223344
	audioSSRC = 0x55667788
	viewSSRC  = 1 // the viewer's own; its report phase is then 1 ns
)

// base is a whole second, so RTP timestamps at 90 kHz and arrival times
// in whole milliseconds convert without rounding.
var base = time.Unix(1_700_000_000, 0).UnixNano()

func msec(n float64) int64 { return int64(n * float64(time.Millisecond)) }

func browserViewer() (*accountant, *counters) {
	var c counters
	c.audioPT.add(111)
	return &accountant{c: &c, swallow: true, fb: newFeedback(viewSSRC, true)}, &c
}

// video feeds video packet seq with the RTP timestamp it would have at one
// packet per millisecond from seq 65533, arriving at base + at.
func video(a *accountant, seq uint16, at int64, marker bool) {
	i := uint32(seq - 65533)
	a.inspect(rtpPacket(marker, 102, seq, 1000+90*i, videoSSRC, 100), base+at)
}

// reportOf returns the receiver report among pkts, failing when there is
// not exactly one, and checks the whole compound survives the wire format.
func reportOf(t *testing.T, pkts []rtcp.Packet) *rtcp.ReceiverReport {
	t.Helper()
	raw, err := rtcp.Marshal(pkts)
	if err != nil {
		t.Fatalf("marshal %v: %v", pkts, err)
	}
	back, err := rtcp.Unmarshal(raw)
	if err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	var rr *rtcp.ReceiverReport
	for _, p := range back {
		switch p := p.(type) {
		case *rtcp.ReceiverReport:
			if rr != nil {
				t.Fatal("two receiver reports in one compound")
			}
			rr = p
		case *rtcp.SourceDescription:
			// It would name the viewer's SSRC, unknown to the server.
			t.Errorf("an SDES next to the report: %v", p)
		}
	}
	if rr == nil {
		t.Fatalf("no receiver report in %v", back)
	}
	if rr.SSRC != viewSSRC {
		t.Errorf("report sender SSRC %#x, want the viewer's %#x", rr.SSRC, viewSSRC)
	}
	return rr
}

func hasReport(pkts []rtcp.Packet) bool {
	return slices.ContainsFunc(pkts, func(p rtcp.Packet) bool { _, ok := p.(*rtcp.ReceiverReport); return ok })
}

func nacksOf(pkts []rtcp.Packet) []*rtcp.TransportLayerNack {
	var out []*rtcp.TransportLayerNack
	for _, p := range pkts {
		if n, ok := p.(*rtcp.TransportLayerNack); ok {
			out = append(out, n)
		}
	}
	return out
}

func TestReceiverReportFields(t *testing.T) {
	a, _ := browserViewer()
	// 65533..5 across the wrap; 0, 3 and 4 lost; 5 arrives 10 ms late.
	for _, seq := range []uint16{65533, 65534, 65535, 1, 2} {
		video(a, seq, msec(float64(seq-65533)), false)
	}
	video(a, 5, msec(8+10), true)
	for _, seq := range []uint16{10, 11, 12} {
		a.inspect(rtpPacket(false, 111, seq, 960*uint32(seq), audioSSRC, 80), base+msec(float64(seq)))
	}

	t1 := base + msec(100)
	if hasReport(a.collect(t1)) {
		t.Fatal("a report before its phase (the SSRC modulo a second) was due")
	}
	rr := reportOf(t, a.collect(t1+1))
	if len(rr.Reports) != 2 {
		t.Fatalf("%d report blocks, want video and audio: %+v", len(rr.Reports), rr.Reports)
	}
	v, au := rr.Reports[0], rr.Reports[1]
	// RFC 3550 A.8 in integers: five packets in step (D = 0), then one
	// 10 ms = 900 ticks late: J×16 = 900, reported 900>>4.
	want := rtcp.ReceptionReport{SSRC: videoSSRC, LastSequenceNumber: 1<<16 | 5, TotalLost: 3,
		FractionLost: 3 * 256 / 9, Jitter: 900 >> 4}
	if v != want {
		t.Errorf("video block %+v\nwant        %+v", v, want)
	}
	if au.SSRC != audioSSRC || au.LastSequenceNumber != 12 || au.TotalLost != 0 || au.FractionLost != 0 {
		t.Errorf("audio block %+v, want SSRC %#x, highest 12, nothing lost", au, audioSSRC)
	}

	// 3 arrives late and fills its gap; 6..15 arrive in step. The next
	// interval expected 10 and lost "-1": fraction 0, cumulative 2.
	video(a, 3, msec(20), false)
	for seq := uint16(6); seq <= 15; seq++ {
		video(a, seq, msec(float64(seq-65533))+msec(10), false)
	}
	if hasReport(a.collect(t1 + 1 + msec(999))) {
		t.Error("a report came a millisecond early")
	}
	rr = reportOf(t, a.collect(t1+1+int64(time.Second)))
	v = rr.Reports[0]
	if v.LastSequenceNumber != 1<<16|15 || v.TotalLost != 2 || v.FractionLost != 0 {
		t.Errorf("second video block %+v, want highest 65536+15, 2 lost in all, fraction 0", v)
	}
	// 6..15 arrived in step with 5 (D = 0), so J×16 only decays, by
	// (J×16+8)>>4 a packet: 900, 844, 791, 742, 696, 652, 611, 573, 537,
	// 503, 472.
	if v.Jitter != 472>>4 {
		t.Errorf("jitter %d, want %d", v.Jitter, 472>>4)
	}
}

func TestReportsOncePerSecond(t *testing.T) {
	a, _ := browserViewer()
	video(a, 65533, 0, true)
	reports := 0
	for now := base; now < base+int64(10*time.Second); now += msec(20) { // the reactor's rounds
		for _, p := range a.collect(now) {
			if _, ok := p.(*rtcp.ReceiverReport); ok {
				reports++
			}
		}
	}
	if reports != 10 {
		t.Errorf("%d reports in 10 s, want 10", reports)
	}
	// A reactor that fell behind sends one report, not the backlog.
	n := 0
	for _, p := range a.collect(base + int64(30*time.Second)) {
		if _, ok := p.(*rtcp.ReceiverReport); ok {
			n++
		}
	}
	if n != 1 || len(a.collect(base+int64(30*time.Second)+msec(1))) != 0 {
		t.Errorf("after a 20 s stall: %d reports at once, then more right after; want 1, then none", n)
	}
}

func TestNACKBitmap(t *testing.T) {
	a, c := browserViewer()
	// Received 100, 101, 104, 110, 130: lost 102-103, 105-109, 111-129.
	for _, seq := range []uint16{100, 101, 104, 110, 130} {
		a.inspect(rtpPacket(false, 102, seq, 0, videoSSRC, 100), base)
	}
	nacks := nacksOf(a.collect(base))
	if len(nacks) != 1 {
		t.Fatalf("%d NACK packets, want 1", len(nacks))
	}
	// PID 102; BLP bit i is PID+1+i: 103 (bit 0), 105-109 (bits 2-6),
	// 111-118 (bits 8-15). Then PID 119 with 120-129 (bits 0-9).
	want := []rtcp.NackPair{{PacketID: 102, LostPackets: 0b1111_1111_0111_1101}, {PacketID: 119, LostPackets: 0b11_1111_1111}}
	if n := nacks[0]; n.SenderSSRC != viewSSRC || n.MediaSSRC != videoSSRC || !slices.Equal(n.Nacks, want) {
		t.Errorf("NACK %+v\nwant pairs %+v from %#x about %#x", n, want, viewSSRC, videoSSRC)
	}
	if got := c.gaps.Load(); got != 2+5+19 {
		t.Errorf("%d gaps counted, want 26", got)
	}

	// Not again before the retry interval; then without what arrived.
	if n := nacksOf(a.collect(base + msec(50))); len(n) != 0 {
		t.Errorf("NACKed again after 50 ms: %+v", n)
	}
	a.inspect(rtpPacket(false, 102, 103, 0, videoSSRC, 100), base+msec(60))
	for seq := uint16(111); seq <= 129; seq++ {
		a.inspect(rtpPacket(false, 102, seq, 0, videoSSRC, 100), base+msec(60))
	}
	nacks = nacksOf(a.collect(base + msec(100)))
	want = []rtcp.NackPair{{PacketID: 102, LostPackets: 0b0111_1100}}
	if len(nacks) != 1 || !slices.Equal(nacks[0].Nacks, want) {
		t.Errorf("retry %+v, want %+v (102, 105-109)", nacks, want)
	}
	// A third try, then the packets are given up.
	if n := nacksOf(a.collect(base + msec(200))); len(n) != 1 {
		t.Errorf("third try: %+v", n)
	}
	if n := nacksOf(a.collect(base + msec(300))); len(n) != 0 {
		t.Errorf("a fourth NACK for the same packets: %+v", n)
	}
}

func TestNACKAcrossWrapAndPLI(t *testing.T) {
	a, _ := browserViewer()
	for _, seq := range []uint16{65533, 65534, 1} { // 65535 and 0 lost
		a.inspect(rtpPacket(false, 102, seq, 0, videoSSRC, 100), base)
	}
	nacks := nacksOf(a.collect(base))
	want := []rtcp.NackPair{{PacketID: 65535, LostPackets: 1}}
	if len(nacks) != 1 || !slices.Equal(nacks[0].Nacks, want) {
		t.Errorf("NACK across the wrap %+v, want %+v", nacks, want)
	}

	// A hole of 100 cannot be chased packet by packet: one PLI, no NACK,
	// and not another within a second.
	a.inspect(rtpPacket(false, 102, 102, 0, videoSSRC, 100), base+msec(1))
	pkts := a.collect(base + msec(2))
	var plis int
	for _, p := range pkts {
		if pli, ok := p.(*rtcp.PictureLossIndication); ok {
			plis++
			if pli.SenderSSRC != viewSSRC || pli.MediaSSRC != videoSSRC {
				t.Errorf("PLI %+v", pli)
			}
		}
	}
	if plis != 1 || len(nacksOf(pkts)) != 0 {
		t.Errorf("after a hole of 100: %d PLIs and NACKs %+v; want one PLI, no NACK", plis, nacksOf(pkts))
	}
	a.inspect(rtpPacket(false, 102, 300, 0, videoSSRC, 100), base+msec(3))
	for _, p := range a.collect(base + msec(4)) {
		if _, ok := p.(*rtcp.PictureLossIndication); ok {
			t.Error("a second PLI within a second")
		}
	}
}

func TestHealthyViewerReportsNoLoss(t *testing.T) {
	a, _ := browserViewer()
	// Out of order by one, and a duplicate: neither is a loss.
	for i, seq := range []uint16{1, 2, 4, 3, 5, 5, 6} {
		video(a, seq, msec(float64(i)), false)
	}
	// 3 was missing for a moment, but arrived before the viewer looked:
	// feedback is collected after each socket's batch, as a browser's
	// NACK module waits for reordering.
	if n := nacksOf(a.collect(base + msec(10))); len(n) != 0 {
		t.Fatalf("NACKed a packet that had arrived: %+v", n)
	}
	rr := reportOf(t, a.collect(base+msec(10)+int64(time.Second)))
	if v := rr.Reports[0]; v.TotalLost != 0 || v.FractionLost != 0 || v.LastSequenceNumber != 6 {
		t.Errorf("block %+v, want highest 6 and no loss", v)
	}
}

func TestStalls(t *testing.T) {
	var c counters
	a := accountant{c: &c, swallow: true}
	at := int64(0)
	for seq := uint16(0); seq < 30; seq++ {
		if seq == 20 {
			at += msec(300) // a pause a viewer would see
		}
		at += msec(33.3)
		a.inspect(rtpPacket(true, 102, seq, 3000*uint32(seq), videoSSRC, 100), base+at)
	}
	if got := c.stalls.Load(); got != 1 {
		t.Errorf("%d stalls, want 1", got)
	}
}

// TestDecodingViewerLeavesNACKsToPion: a decoding session reports from its
// socket's counts too, but its NACKs come from pion, which sees its media.
func TestDecodingViewerLeavesNACKsToPion(t *testing.T) {
	var c counters
	a := &accountant{c: &c, fb: newFeedback(viewSSRC, false)}
	for i, seq := range []uint16{1, 2, 5, 200} {
		video(a, seq, msec(float64(i)), false)
	}
	pkts := append(a.collect(base+msec(10)), a.collect(base+msec(11))...)
	for _, p := range pkts {
		switch p.(type) {
		case *rtcp.TransportLayerNack, *rtcp.PictureLossIndication:
			t.Errorf("a decoding session sent %T itself", p)
		}
	}
	if v := reportOf(t, pkts).Reports[0]; v.TotalLost != 2+194 || v.LastSequenceNumber != 200 {
		t.Errorf("block %+v, want highest 200 and 196 lost", v)
	}
}
