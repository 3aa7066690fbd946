package rtpsend

import (
	"log/slog"
	"testing"
	"time"

	"github.com/pion/rtcp"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/rtph264"
	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// The fuzzed viewer's video SSRC and first sequence number: fixed, so
// that seeds can NACK packets that are in its history.
const (
	fuzzSSRC     = 0x5eed0001
	fuzzFirstSeq = 1000
)

// rtcpSeeds are compound packets of the kinds browsers send a server
// that offers NACK and PLI (Chromium: a receiver report with SDES, then
// NACK, PLI, REMB or transport-wide feedback; Firefox adds XR), about
// the fuzzed viewer's video and about SSRCs it does not send.
func rtcpSeeds(t testing.TB) [][]byte {
	const viewer = 0x0a0b0c0d
	rr := func(seq, lost uint32, ssrc uint32) *rtcp.ReceiverReport {
		return &rtcp.ReceiverReport{SSRC: viewer, Reports: []rtcp.ReceptionReport{{
			SSRC: ssrc, LastSequenceNumber: seq, TotalLost: lost, Jitter: 90, Delay: 6000,
		}}}
	}
	sdes := &rtcp.SourceDescription{Chunks: []rtcp.SourceDescriptionChunk{{
		Source: viewer, Items: []rtcp.SourceDescriptionItem{{Type: rtcp.SDESCNAME, Text: "Gzp1dYIYqMbYEFbq"}},
	}}}
	nack := func(seqs ...uint16) *rtcp.TransportLayerNack {
		return &rtcp.TransportLayerNack{SenderSSRC: viewer, MediaSSRC: fuzzSSRC, Nacks: rtcp.NackPairsFromSequenceNumbers(seqs)}
	}
	all := make([]uint16, 300)
	for i := range all {
		all[i] = uint16(fuzzFirstSeq + i)
	}
	compounds := [][]rtcp.Packet{
		{rr(fuzzFirstSeq+20, 0, fuzzSSRC), sdes},
		{rr(fuzzFirstSeq+20, 0, fuzzSSRC), sdes, nack(fuzzFirstSeq+3, fuzzFirstSeq+4, fuzzFirstSeq+9)},
		{rr(fuzzFirstSeq+600, 300, fuzzSSRC), rr(fuzzFirstSeq+1200, 600, fuzzSSRC), rr(fuzzFirstSeq+1800, 900, fuzzSSRC)},
		{rr(7, 1, 0x1234), nack(all...)},
		{&rtcp.PictureLossIndication{SenderSSRC: viewer, MediaSSRC: fuzzSSRC}},
		{&rtcp.ReceiverEstimatedMaximumBitrate{SenderSSRC: viewer, Bitrate: 2.5e6, SSRCs: []uint32{fuzzSSRC}}},
		{&rtcp.TransportLayerCC{SenderSSRC: viewer, MediaSSRC: fuzzSSRC, BaseSequenceNumber: 1, PacketStatusCount: 1,
			PacketChunks: []rtcp.PacketStatusChunk{&rtcp.RunLengthChunk{PacketStatusSymbol: rtcp.TypeTCCPacketReceivedSmallDelta, RunLength: 1}},
			RecvDeltas:   []*rtcp.RecvDelta{{Type: rtcp.TypeTCCPacketReceivedSmallDelta, Delta: 250}}}},
		{&rtcp.SenderReport{SSRC: viewer, Reports: []rtcp.ReceptionReport{{SSRC: fuzzSSRC, LastSequenceNumber: fuzzFirstSeq + 30}}}},
		{&rtcp.ExtendedReport{SenderSSRC: viewer, Reports: []rtcp.ReportBlock{&rtcp.ReceiverReferenceTimeReportBlock{NTPTimestamp: 1 << 40}}}},
		{rr(fuzzFirstSeq+20, 0, fuzzSSRC), &rtcp.Goodbye{Sources: []uint32{viewer}}},
	}
	var seeds [][]byte
	for _, c := range compounds {
		b, err := rtcp.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	return append(seeds, nil, []byte{0x80, 201, 0, 1, 0, 0, 0, 1})
}

// fuzzViewer is a sender that has sent a GOP from a real hub path: its
// history holds packets fuzzFirstSeq on, sent lists them in order.
func fuzzViewer(t *testing.T) (w *Sender, out *fakeOutput) {
	h := hub.New(hub.Config{QueueSize: 16})
	pub, err := h.Publish("live/fuzz", "fuzz")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	for i := range 10 {
		nalu := make([]byte, 3000) // three packets a picture
		nalu[0] = 0x41
		au := &av.AccessUnit{PTS: int64(i) * 3000, NALUs: [][]byte{nalu}}
		if i == 0 {
			nalu[0] = 0x65
			au.NALUs, au.IDR = [][]byte{{0x67, 0x42}, {0x68, 0xce}, nalu}, true
		}
		au.Payloads = rtph264.Fragment(au.NALUs, rtph264.DefaultMaxPayload)
		pub.Write(au)
	}
	r, err := h.AddReader("live/fuzz", "viewer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	r.Attach()
	out = &fakeOutput{}
	w = New(Config{Out: out, Src: r, VideoSSRC: fuzzSSRC, VideoPT: 102, Session: t.Context(),
		Log: slog.New(slog.DiscardHandler), OnEnd: func(err error) { t.Errorf("sender ended: %v", err) }})
	w.st = rtpstamp.NewStamper(fuzzSSRC, 102, fuzzFirstSeq, 0)
	w.SetWake(func() {})
	now := time.Now()
	for range 100 { // bounded: the cached GOP is ten pictures
		w.paceUntil = time.Time{}
		if at, _ := w.Step(now); at.IsZero() {
			break
		}
	}
	if len(out.seqs) == 0 || out.seqs[0] != fuzzFirstSeq {
		t.Fatalf("the viewer sent %v, want packets from %d", out.seqs, fuzzFirstSeq)
	}
	return w, out
}

// FuzzOnRTCP hands arbitrary bytes, as the decrypted compound packet of
// an SRTCP datagram, to what the media planes do with one: parse it, and
// if it parses, give it to the viewer's sender (NACK box, congestion
// rule). The NACK box stays within its bound, the next Step resends only
// packets that were sent and NACKed for this viewer's video, at most
// maxResendPerNACK of them, and RTCP never ends the viewer.
func FuzzOnRTCP(f *testing.F) {
	for _, s := range rtcpSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		pkts, err := rtcp.Unmarshal(b)
		if err != nil {
			return // the plane counts it as malformed
		}
		w, out := fuzzViewer(t)
		sent := map[uint16]bool{}
		for _, s := range out.seqs {
			sent[s] = true
		}
		nacked := map[uint16]bool{}
		for _, p := range pkts {
			if n, ok := p.(*rtcp.TransportLayerNack); ok && n.MediaSSRC == fuzzSSRC {
				for _, pair := range n.Nacks {
					// Bounded: a pair names at most 17 packets.
					pair.Range(func(seq uint16) bool { nacked[seq] = true; return true })
				}
			}
		}
		w.OnRTCP(pkts)
		if n := len(w.nacks.seqs); n > maxResendPerNACK {
			t.Fatalf("%d sequence numbers wait in the NACK box, bound %d", n, maxResendPerNACK)
		}
		if h := w.congestion.heavy; h >= congestionWindows {
			t.Fatalf("%d heavy windows counted, the rule acts at %d", h, congestionWindows)
		}
		before := len(out.seqs)
		if _, done := w.Step(time.Now()); done {
			t.Fatal("the sender finished on RTCP")
		}
		resent := out.seqs[before:]
		if len(resent) > maxResendPerNACK || uint64(len(resent)) != w.Retransmitted() {
			t.Fatalf("%d packets resent, %d counted; bound %d", len(resent), w.Retransmitted(), maxResendPerNACK)
		}
		for _, s := range resent {
			if !sent[s] || !nacked[s] {
				t.Fatalf("resent %d: sent %v, NACKed %v", s, sent[s], nacked[s])
			}
		}
	})
}

// TestOnRTCPSeeds checks that the seeds reach what FuzzOnRTCP guards: a
// NACK of three sent packets resends those three; one of 300 fills the
// box to its bound and resends every packet sent (the GOP, fewer than
// that); sustained loss makes the congestion rule skip.
func TestOnRTCPSeeds(t *testing.T) {
	seeds := rtcpSeeds(t)
	for _, tc := range []struct {
		seed                 int
		boxed, resent, skips int // resent -1: every packet sent
	}{{1, 3, 3, 0}, {3, maxResendPerNACK, -1, 0}, {2, 0, 0, 1}} {
		pkts, err := rtcp.Unmarshal(seeds[tc.seed])
		if err != nil {
			t.Fatal(err)
		}
		w, out := fuzzViewer(t)
		sent := len(out.seqs)
		w.OnRTCP(pkts)
		boxed := len(w.nacks.seqs)
		w.Step(time.Now())
		want := tc.resent
		if want < 0 {
			want = sent
		}
		if got := len(out.seqs) - sent; boxed != tc.boxed || got != want || int(w.CongestionSkips()) != tc.skips {
			t.Errorf("seed %d: %d NACKed packets boxed, %d resent, %d skips; want %d, %d and %d",
				tc.seed, boxed, got, w.CongestionSkips(), tc.boxed, want, tc.skips)
		}
	}
}

// TestFuzzCorpusOnRTCP writes FuzzOnRTCP's seeds as its checked-in corpus
// when asked to (see testkit.SeedCorpus).
func TestFuzzCorpusOnRTCP(t *testing.T) {
	testkit.SeedCorpusBytes(t, "FuzzOnRTCP", rtcpSeeds(t))
}
