package rtpsend

import (
	"context"
	"fmt"
	"testing"

	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/rtph264"
	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// BenchmarkAccessUnitFanout measures srtwhep's own per-access-unit work for
// 1, 10 and 100 viewers: the hub's push into every reader's queue, and for
// every viewer the dequeue, header stamping around the shared payloads and
// the NACK history entry. (pion's SRTP and the send path come after it and
// are measured by the capacity ladder.) One op is one 720p P-frame of ten
// packets delivered to all viewers; allocs/op must stay 0.
func BenchmarkAccessUnitFanout(b *testing.B) {
	au := benchPFrame()
	idr := &av.AccessUnit{NALUs: [][]byte{{0x67, 1}, {0x68, 1}, {0x65, 1}}, IDR: true, Size: 6}
	idr.Payloads = rtph264.Fragment(idr.NALUs, rtph264.DefaultMaxPayload)

	for _, viewers := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("viewers=%d", viewers), func(b *testing.B) {
			pub, rs := benchPath(b, viewers, false, func(p *hub.Publisher) { p.Write(idr) })
			type viewer struct {
				r    *hub.Reader
				st   *rtpstamp.Stamper
				pkts []rtp.Packet
				hist history
			}
			vs := make([]*viewer, viewers)
			ctx := context.Background()
			for i, r := range rs {
				v := &viewer{r: r, st: rtpstamp.NewStamper(uint32(i), 102, 0, 0)}
				f, _ := r.RecvFrame(ctx) // the cached IDR
				v.pkts = v.st.Stamp(v.pkts, f.Video, f.CatchUp)
				vs[i] = v
			}
			// The publisher makes one AccessUnit per frame; two reused
			// ones stand in here, so allocs/op counts only fan-out work.
			var frames [2]av.AccessUnit
			b.ReportAllocs()
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				frame := &frames[n%2]
				*frame = *au
				frame.PTS = int64(n+1) * 3000
				pub.Write(frame)
				for _, v := range vs {
					f, err := v.r.RecvFrame(ctx)
					if err != nil {
						b.Fatal(err)
					}
					v.pkts = v.st.Stamp(v.pkts, f.Video, f.CatchUp)
					v.hist.record(f.Video, v.pkts)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*viewers*len(au.Payloads)), "ns/packet")
		})
	}
}

// BenchmarkAudioFrameFanout is BenchmarkAccessUnitFanout for audio: one op
// is one 20 ms Opus frame (one packet) through the hub to 1, 10 and 100
// viewers, each dequeuing and stamping it. allocs/op must stay 0.
func BenchmarkAudioFrameFanout(b *testing.B) {
	for _, viewers := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("viewers=%d", viewers), func(b *testing.B) {
			pub, rs := benchPath(b, viewers, true, func(p *hub.Publisher) { p.SetAudio(true) })
			type viewer struct {
				r   *hub.Reader
				st  opusStamper
				pkt rtp.Packet
			}
			vs := make([]*viewer, viewers)
			for i, r := range rs {
				vs[i] = &viewer{r: r, st: opusStamper{ssrc: uint32(i), pt: 111}}
			}
			ctx := context.Background()
			data := make([]byte, 240) // 96 kbit/s in 20 ms
			// The transcoder makes one AudioFrame per 20 ms; two reused
			// ones stand in here, so allocs/op counts only fan-out work.
			var frames [2]av.AudioFrame
			b.ReportAllocs()
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				frame := &frames[n%2]
				*frame = av.AudioFrame{PTS: int64(n) * 1800, Duration: 960, Data: data}
				pub.WriteAudio(frame)
				for _, v := range vs {
					f, err := v.r.RecvFrame(ctx)
					if err != nil {
						b.Fatal(err)
					}
					v.pkt = v.st.stamp(f.Audio, f.Audio.PTS)
				}
			}
		})
	}
}

// benchPath publishes live/bench on a hub of its own, lets prime set the
// publisher up (a cached IDR, audio), and adds n readers attached for
// video, or video and audio with av. The publisher closes with the
// benchmark.
func benchPath(b *testing.B, n int, av bool, prime func(*hub.Publisher)) (*hub.Publisher, []*hub.Reader) {
	b.Helper()
	h := hub.New(hub.Config{QueueSize: 4})
	pub, err := h.Publish("live/bench", "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pub.Close() })
	prime(pub)
	rs := make([]*hub.Reader, n)
	for i := range rs {
		if rs[i], err = h.AddReader("live/bench", fmt.Sprint(i)); err != nil {
			b.Fatal(err)
		}
		if av {
			rs[i].AttachAV()
		} else {
			rs[i].Attach()
		}
	}
	return pub, rs
}

// benchPFrame is a 720p P-frame of ten packets, cut as a publisher cuts
// it.
func benchPFrame() *av.AccessUnit {
	nalu := make([]byte, 11000)
	nalu[0] = 0x41 // non-IDR slice
	au := &av.AccessUnit{NALUs: [][]byte{nalu}, Size: len(nalu)}
	au.Payloads = rtph264.Fragment(au.NALUs, rtph264.DefaultMaxPayload)
	return au
}
