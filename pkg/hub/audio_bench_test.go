package hub

import (
	"context"
	"fmt"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// BenchmarkWriteAudioNoDrops is BenchmarkWriteNoDrops for Opus frames to
// readers that take audio: one op is one frame handed to every reader.
func BenchmarkWriteAudioNoDrops(b *testing.B) {
	const batch = 64
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("readers=%d", n), func(b *testing.B) {
			h := New(Config{QueueSize: batch})
			pub, err := h.Publish("bench", "")
			if err != nil {
				b.Fatal(err)
			}
			defer pub.Close()
			pub.SetAudio(true)
			readers := make([]*Reader, n)
			for i := range readers {
				r, err := h.AddReader("bench", fmt.Sprint(i))
				if err != nil {
					b.Fatal(err)
				}
				r.AttachAV()
				readers[i] = r
			}
			frames := make([]*av.AudioFrame, 50)
			for i := range frames {
				frames[i] = mkAF(i)
			}
			done, cancel := context.WithCancel(context.Background())
			cancel()

			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				pub.WriteAudio(frames[i%len(frames)])
				if (i+1)%batch == 0 {
					b.StopTimer()
					for _, r := range readers {
						for {
							if _, err := r.RecvFrame(done); err != nil {
								break
							}
						}
					}
					b.StartTimer()
				}
			}
			b.StopTimer()
			for _, r := range readers {
				if r.Dropped() != 0 {
					b.Fatalf("reader dropped %d frames", r.Dropped())
				}
			}
		})
	}
}
