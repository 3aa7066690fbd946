package rtpsend

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/bwe"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// wireOutput keeps every packet as it would go on the wire.
type wireOutput struct{ pkts []rtp.Packet }

func (o *wireOutput) WriteVideo(pkts []rtp.Packet) (int, error) {
	for i := range pkts {
		o.add(&pkts[i])
	}
	return len(pkts), nil
}
func (o *wireOutput) WriteAudio(p *rtp.Packet) error { o.add(p); return nil }
func (o *wireOutput) WriteRTCP([]rtcp.Packet) error  { return nil }

func (o *wireOutput) add(p *rtp.Packet) {
	buf := make([]byte, 1500)
	n := rtpstamp.MarshalTo(buf, p)
	var q rtp.Packet
	if err := q.Unmarshal(buf[:n]); err != nil {
		panic(err)
	}
	o.pkts = append(o.pkts, q)
}

// tccSeq is p's transport-wide sequence number with extension ID 3, -1
// without one.
func tccSeq(p *rtp.Packet) int {
	b := p.GetExtension(3)
	if len(b) != 2 {
		return -1
	}
	return int(b[0])<<8 | int(b[1])
}

// TestTransportCCStamping: with transport-cc negotiated, video, audio and
// a retransmission carry consecutive numbers of one counter, each packet
// its own; without it, no packet has an extension and the header stays
// 12 bytes.
func TestTransportCCStamping(t *testing.T) {
	for _, tc := range []struct {
		name  string
		id    uint8
		audio bool
		want  []int // transport numbers of video, video, audio, the resend
	}{
		{"video and audio", 3, true, []int{0, 1, 2, 3}},
		{"video only", 3, false, []int{0, 1, -1, 2}},
		{"none", 0, false, []int{-1, -1, -1, -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, out := &fakeSource{}, &wireOutput{}
			s := New(Config{Out: out, Src: src, VideoSSRC: 1, AudioSSRC: 2, VideoPT: 102, AudioPT: 111,
				Session: context.Background(), Log: slog.New(slog.DiscardHandler), OnEnd: func(error) {},
				TransportCC: tc.id, TransportCCAudio: tc.audio})
			s.SetWake(func() {})
			src.push(picture(0, true, false), hub.Frame{Audio: &av.AudioFrame{PTS: 100, Duration: 960, Data: []byte{1, 2, 3}}})
			s.Step(time.Now())
			s.Step(time.Now().Add(time.Second)) // past the catch-up pacing: the audio
			s.OnRTCP([]rtcp.Packet{&rtcp.TransportLayerNack{MediaSSRC: 1,
				Nacks: rtcp.NackPairsFromSequenceNumbers([]uint16{out.pkts[0].SequenceNumber})}})
			s.Step(time.Now())
			if len(out.pkts) != 4 {
				t.Fatalf("%d packets on the wire, want 4", len(out.pkts))
			}
			for i := range out.pkts {
				if got := tccSeq(&out.pkts[i]); got != tc.want[i] {
					t.Errorf("packet %d (SSRC %d) transport number %d, want %d", i, out.pkts[i].SSRC, got, tc.want[i])
				}
				if want := tc.want[i] < 0; want == out.pkts[i].Extension {
					t.Errorf("packet %d: extension bit %v", i, out.pkts[i].Extension)
				}
			}
			if out.pkts[3].SequenceNumber != out.pkts[0].SequenceNumber {
				t.Errorf("the resend has RTP sequence number %d, want the original's %d", out.pkts[3].SequenceNumber, out.pkts[0].SequenceNumber)
			}
			packets, bytes := s.Sent()
			wantBytes := uint64(0)
			for i := range out.pkts[:3] {
				wantBytes += uint64(out.pkts[i].MarshalSize())
			}
			if packets != 3 || bytes != wantBytes {
				t.Errorf("Sent() = %d packets, %d bytes; want 3 and the %d on the wire", packets, bytes, wantBytes)
			}
		})
	}
}

// TestEstimateSources: a viewer without transport-cc gets its estimate
// from receiver-report loss; one with it from its feedback, and from its
// reports until the feedback has said enough.
func TestEstimateSources(t *testing.T) {
	src, out := &fakeSource{}, &wireOutput{}
	clock := time.Now()
	s := New(Config{Out: out, Src: src, VideoSSRC: 1, VideoPT: 102,
		Session: context.Background(), Log: slog.New(slog.DiscardHandler), OnEnd: func(error) {}})
	s.now = func() time.Time { return clock }
	if e := s.Estimate(); e.Bitrate != 0 || e.Source != bwe.SourceNone {
		t.Fatalf("estimate before any report: %+v", e)
	}
	s.bytes.Store(0)
	report := func(lost uint8) {
		s.OnRTCP([]rtcp.Packet{&rtcp.ReceiverReport{Reports: []rtcp.ReceptionReport{{SSRC: 1, FractionLost: lost}}}})
	}
	report(0)
	clock = clock.Add(time.Second)
	s.bytes.Store(2_500_000 / 8) // 2.5 Mbit/s sent in that second
	report(0)
	e := s.Estimate()
	if e.Source != bwe.SourceReceiverReports || e.Bitrate != 2_500_000 {
		t.Fatalf("estimate from a clean report: %+v, want 2.5 Mbit/s from receiver reports", e)
	}
	clock = clock.Add(time.Second)
	s.bytes.Store(2 * 2_500_000 / 8)
	report(154) // 60 % lost
	if e := s.Estimate(); e.Bitrate >= 2_500_000 || e.Trend != bwe.Decreasing {
		t.Fatalf("estimate after heavy loss: %+v, want a cut", e)
	}
}
