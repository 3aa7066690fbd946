package hub

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// BenchmarkWrite measures the publisher's cost per access unit with readers
// that drain their queues on their own goroutines.
func BenchmarkWrite(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("readers=%d", n), func(b *testing.B) {
			h := New(Config{})
			pub, err := h.Publish("bench", "")
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			readers := make([]*Reader, n)
			for i := range readers {
				r, err := h.AddReader("bench", fmt.Sprint(i))
				if err != nil {
					b.Fatal(err)
				}
				r.Attach()
				readers[i] = r
				wg.Go(func() {
					for {
						if _, _, err := recvVideo(ctx, r); err != nil {
							return
						}
					}
				})
			}
			aus := make([]*av.AccessUnit, 30)
			for i := range aus {
				aus[i] = mkAU(i, i == 0)
			}

			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				pub.Write(aus[i%len(aus)])
			}
			b.StopTimer()
			var dropped uint64
			for _, r := range readers {
				dropped += r.Dropped()
			}
			b.ReportMetric(float64(dropped)/float64(b.N*n), "drops/delivery")
			cancel()
			pub.Close()
			wg.Wait()
		})
	}
}

// BenchmarkWriteNoDrops isolates the delivery path: the readers' queues are
// emptied between batches with the timer stopped, so no push ever fails.
func BenchmarkWriteNoDrops(b *testing.B) {
	const batch = 64
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("readers=%d", n), func(b *testing.B) {
			h := New(Config{QueueSize: batch})
			pub, err := h.Publish("bench", "")
			if err != nil {
				b.Fatal(err)
			}
			defer pub.Close()
			readers := make([]*Reader, n)
			for i := range readers {
				r, err := h.AddReader("bench", fmt.Sprint(i))
				if err != nil {
					b.Fatal(err)
				}
				r.Attach()
				readers[i] = r
			}
			aus := make([]*av.AccessUnit, 30)
			for i := range aus {
				aus[i] = mkAU(i, i == 0)
			}
			done, cancel := context.WithCancel(context.Background())
			cancel()

			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				pub.Write(aus[i%len(aus)])
				if (i+1)%batch == 0 {
					b.StopTimer()
					for _, r := range readers {
						for {
							if _, _, err := recvVideo(done, r); err != nil {
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
