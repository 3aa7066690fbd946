package rtpsend

import (
	"context"
	"log/slog"
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// byteOutput counts what is written, original and resent apart: a
// sequence number seen before is a retransmission.
type byteOutput struct {
	seen           map[uint16]bool
	resentAt       map[uint16][]time.Time
	now            *time.Time
	sent, resent   int64
	sentN, resentN int
}

func (o *byteOutput) WriteVideo(pkts []rtp.Packet) (int, error) {
	for i := range pkts {
		n := int64(rtpstamp.HeaderLen + len(pkts[i].Payload))
		seq := pkts[i].SequenceNumber
		if o.seen[seq] {
			o.resent += n
			o.resentN++
			o.resentAt[seq] = append(o.resentAt[seq], *o.now)
			continue
		}
		o.seen[seq] = true
		o.sent += n
		o.sentN++
	}
	return len(pkts), nil
}
func (o *byteOutput) WriteAudio(*rtp.Packet) error  { return nil }
func (o *byteOutput) WriteRTCP([]rtcp.Packet) error { return nil }

// streamAt runs a sender over simulated time: a 2.7 Mbit/s stream (30
// pictures a second of ten 1,100-byte packets) for d, calling between each
// two pictures every 2 ms what the viewer sends.
func streamAt(t *testing.T, d time.Duration, res *Resends, viewer func(s *Sender, out *byteOutput, now time.Time)) (*Sender, *byteOutput) {
	t.Helper()
	src := &fakeSource{}
	now := time.Now()
	out := &byteOutput{seen: map[uint16]bool{}, resentAt: map[uint16][]time.Time{}, now: &now}
	s := New(Config{Out: out, Src: src, VideoSSRC: 1, VideoPT: 102, Session: context.Background(),
		Log: slog.New(slog.DiscardHandler), Resends: res, OnEnd: func(error) {}})
	s.SetWake(func() {})
	s.now = func() time.Time { return now }
	payload := make([]byte, 1100)
	end := now.Add(d)
	for pts := int64(0); now.Before(end); pts += av.ClockRate / 30 {
		au := &av.AccessUnit{PTS: pts, IDR: pts == 0}
		for range 10 {
			au.Payloads = append(au.Payloads, payload)
		}
		src.push(hub.Frame{Video: au})
		s.Step(now)
		for range 16 { // 33 ms
			now = now.Add(2 * time.Millisecond)
			viewer(s, out, now)
			s.Step(now)
		}
	}
	return s, out
}

// TestNACKFloodBounded plays the attacker of issue 29 against one sender:
// 500 NACKs a second, each for the last 128 packets. What is resent stays
// within a quarter of what is sent plus the floor, and no packet goes out
// again within 100 ms (no RTT is known).
func TestNACKFloodBounded(t *testing.T) {
	const secs = 5
	var res Resends
	s, out := streamAt(t, secs*time.Second, &res, func(s *Sender, _ *byteOutput, _ time.Time) {
		newest := s.st.NextSeq() - 1
		var seqs []uint16
		for i := range uint16(128) {
			seqs = append(seqs, newest-i)
		}
		s.OnRTCP([]rtcp.Packet{&rtcp.TransportLayerNack{MediaSSRC: 1, Nacks: rtcp.NackPairsFromSequenceNumbers(seqs)}})
	})
	limit := out.sent/resendShare + (secs+1)*resendFloor
	t.Logf("sent %d bytes, resent %d (%.2f×), %d NACKed packets not resent", out.sent, out.resent,
		float64(out.sent+out.resent)/float64(out.sent), s.NotResent())
	if out.resent == 0 || out.resent > limit {
		t.Fatalf("resent %d bytes, want some and at most %d", out.resent, limit)
	}
	if b, d := res.Counts(); int64(b) != out.resent || d == 0 || d != s.NotResent() {
		t.Fatalf("server-wide counts %d bytes, %d dropped; the viewer got %d bytes resent and %d not", b, d, out.resent, s.NotResent())
	}
	for seq, at := range out.resentAt {
		for i := 1; i < len(at); i++ {
			if at[i].Sub(at[i-1]) < resendInterval {
				t.Fatalf("packet %d resent %v after its last resend, want at least %v", seq, at[i].Sub(at[i-1]), resendInterval)
			}
		}
	}
}

// TestServerWideResendBudget: with a server-wide budget below one
// viewer's share, the server-wide one decides.
func TestServerWideResendBudget(t *testing.T) {
	const secs = 3
	var res Resends
	res.SetMaxBitrate(8 * 10_000) // 10 kB/s
	_, out := streamAt(t, secs*time.Second, &res, func(s *Sender, _ *byteOutput, _ time.Time) {
		newest := s.st.NextSeq() - 1
		s.OnRTCP([]rtcp.Packet{&rtcp.TransportLayerNack{MediaSSRC: 1, Nacks: []rtcp.NackPair{{PacketID: newest - 16, LostPackets: 0xffff}}}})
	})
	if out.resent == 0 || out.resent > (secs+1)*10_000 {
		t.Fatalf("resent %d bytes in %d s under a 10 kB/s server-wide budget", out.resent, secs)
	}
}

// TestLossyViewerResent: a viewer losing 5 % of the packets at random,
// NACKing each loss once, is resent every one of them: the budget is for
// floods, not for loss.
func TestLossyViewerResent(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(1, 2))
	var nacked int
	var lastSeen uint16
	started := false
	s, out := streamAt(t, 5*time.Second, nil, func(s *Sender, _ *byteOutput, _ time.Time) {
		newest := s.st.NextSeq() - 1
		if !started {
			started, lastSeen = true, newest
			return
		}
		var lost []uint16
		for seq := lastSeen + 1; seq != newest+1; seq++ {
			if rng.Float64() < 0.05 {
				lost = append(lost, seq)
			}
		}
		lastSeen = newest
		if len(lost) > 0 {
			nacked += len(lost)
			s.OnRTCP([]rtcp.Packet{&rtcp.TransportLayerNack{MediaSSRC: 1, Nacks: rtcp.NackPairsFromSequenceNumbers(lost)}})
		}
	})
	if nacked < 50 || out.resentN != nacked || s.NotResent() != 0 {
		t.Fatalf("%d packets NACKed, %d resent, %d not", nacked, out.resentN, s.NotResent())
	}
}
