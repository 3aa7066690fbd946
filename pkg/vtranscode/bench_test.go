package vtranscode

import (
	"testing"
	"time"
)

// BenchmarkTranscode720p measures one path's transcoding of 10 s of
// 1280x720 at 30 fps, 2.5 Mbit/s, as the share of one core it takes live
// (the transcoder thread's CPU time over the clip's duration; goal ≤ 30 %)
// and the mean time a picture spends in it when the pictures come at
// 30 fps. gop60 is make bench's clip, which passes through unless forced;
// each other case is one reason `video: auto` transcodes a path, so the
// decoder's share of the cost shows per reason (the output encoder is the
// same in all).
func BenchmarkTranscode720p(b *testing.B) {
	const seconds = 10
	for _, bc := range []struct {
		name  string
		codec Codec
		args  []string
	}{
		{"gop60", CodecH264, []string{"-c:v", "libx264", "-pix_fmt", "yuv420p", "-bf", "0", "-g", "60"}},
		{"bframes", CodecH264, []string{"-c:v", "libx264", "-pix_fmt", "yuv420p", "-bf", "2", "-g", "60"}},
		{"gop250", CodecH264, []string{"-c:v", "libx264", "-pix_fmt", "yuv420p", "-bf", "0", "-g", "250"}},
		// High 4:4:4 Predictive: browsers decode only 4:2:0.
		{"yuv444", CodecH264, []string{"-c:v", "libx264", "-pix_fmt", "yuv444p", "-bf", "0", "-g", "60"}},
		// H.265 for a viewer that offers only H.264.
		{"h265", CodecH265, []string{"-c:v", "libx265", "-pix_fmt", "yuv420p", "-bf", "0", "-g", "60", "-x265-params", "log-level=error"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			in := clip(b, seconds, "1280x720", append([]string{"-preset", "veryfast", "-b:v", "2500k"}, bc.args...)...)
			var cpu, lat time.Duration
			var pictures uint64
			for b.Loop() {
				var s sink
				tc, err := New(Config{Codec: bc.codec, FPS: 30, Bitrate: 2_500_000, QueueSize: len(in)}, s.emit)
				if err != nil {
					b.Fatal(err)
				}
				go tc.Run()
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

// BenchmarkTranscode1080p60 is issue 29's "one publisher can take the
// box": OBS's default x264 at 1080p60 with B-frames, 5 s, transcoded at
// full size (what the server did before the caps) and under the default
// caps (720p30), as the share of one core it takes live and the share
// the cost model (Job.Estimate) predicted for it. Pacing is skipped: the
// thread CPU time does not depend on it.
func BenchmarkTranscode1080p60(b *testing.B) {
	const seconds = 5
	in := clipRate(b, seconds, "1920x1080", 60, obs1080p60...)
	for _, bc := range []struct {
		name      string
		maxHeight int
		maxFPS    float64
	}{
		{"full", 0, 0},
		{"capped", 720, 30},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := Config{FPS: 60, Bitrate: 6_000_000, QueueSize: len(in) + 1, QueueBytes: 1 << 30,
				MaxHeight: bc.maxHeight, MaxFPS: bc.maxFPS}
			var cpu time.Duration
			for b.Loop() {
				var s sink
				tc, err := New(cfg, s.emit)
				if err != nil {
					b.Fatal(err)
				}
				go tc.Run()
				for _, au := range in {
					tc.Write(au)
				}
				want := len(in) - 4
				if bc.maxFPS > 0 {
					want = want/2 - 1
				}
				s.waitFor(b, want)
				tc.Close()
				cpu += tc.Stats().CPU
			}
			b.ReportMetric(100*cpu.Seconds()/float64(b.N)/seconds, "%core")
			b.ReportMetric(100*PlanJob(cfg, 1920, 1080).Estimate(), "%core-estimated")
		})
	}
}
