package vtranscode

import (
	"testing"
	"time"
)

// BenchmarkTranscode720p measures one path's transcoding of 10 s of
// 1280x720 at 30 fps, 2.5 Mbit/s (make bench's clip, and the same with
// x264's B-frames), as the share of one core it takes live (the
// transcoder thread's CPU time over the clip's duration; goal ≤ 30 %) and
// the mean time a picture spends in it when the pictures come at 30 fps.
func BenchmarkTranscode720p(b *testing.B) {
	const seconds = 10
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"gop60", []string{"-bf", "0", "-g", "60"}},
		{"bframes", []string{"-bf", "2", "-g", "60"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			in := clip(b, seconds, "1280x720", append([]string{"-c:v", "libx264", "-preset", "veryfast", "-b:v", "2500k"}, bc.args...)...)
			var cpu, lat time.Duration
			var pictures uint64
			for b.Loop() {
				var s sink
				tc, err := New(Config{FPS: 30, Bitrate: 2_500_000, QueueSize: len(in)}, s.emit)
				if err != nil {
					b.Fatal(err)
				}
				// Paced as live so the latency is a picture's own, not a
				// queue's; the CPU is the thread's, unaffected by pacing.
				start := time.Now()
				for i, au := range in {
					if d := time.Until(start.Add(time.Duration(i) * time.Second / 30)); d > 0 {
						time.Sleep(d)
					}
					au.Arrival = time.Now()
					tc.Write(au)
				}
				s.waitFor(b, len(in)-4)
				tc.Close()
				st := tc.Stats()
				cpu += st.CPU
				lat += st.LatencySum
				pictures += st.LatencyCount
			}
			b.ReportMetric(100*cpu.Seconds()/float64(b.N)/seconds, "%core")
			b.ReportMetric(float64(lat.Microseconds())/1000/float64(max(1, pictures)), "ms-in-transcoder")
		})
	}
}
