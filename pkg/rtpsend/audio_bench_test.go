package rtpsend

import (
	"context"
	"fmt"
	"testing"

	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// BenchmarkAudioFrameFanout is BenchmarkAccessUnitFanout for audio: one op
// is one 20 ms Opus frame (one packet) through the hub to 1, 10 and 100
// viewers, each dequeuing and stamping it. allocs/op must stay 0.
func BenchmarkAudioFrameFanout(b *testing.B) {
	for _, viewers := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("viewers=%d", viewers), func(b *testing.B) {
			h := hub.New(hub.Config{QueueSize: 4})
			pub, err := h.Publish("live/bench", "bench")
			if err != nil {
				b.Fatal(err)
			}
			defer pub.Close()
			pub.SetAudio(true)
			type viewer struct {
				r   *hub.Reader
				st  opusStamper
				pkt rtp.Packet
			}
			vs := make([]*viewer, viewers)
			for i := range vs {
				r, err := h.AddReader("live/bench", fmt.Sprint(i))
				if err != nil {
					b.Fatal(err)
				}
				r.AttachAV()
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
