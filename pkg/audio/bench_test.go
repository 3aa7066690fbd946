package audio

import (
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// BenchmarkTranscodeAAC measures the cost of one path's transcoding: 10 s
// of AAC-LC 128 kbit/s stereo at 44.1 kHz (the common OBS/ffmpeg output)
// to Opus 96 kbit/s, reported as the share of one core it would take live.
func BenchmarkTranscodeAAC(b *testing.B) {
	const seconds = 10
	p := runPipeline(b, ffmpegTS(b, seconds, 44100, "-c:a", "aac", "-b:a", "128k", "-ac", "2"), Config{})
	if len(p.tracks) != 1 || len(p.units) < seconds*43 {
		b.Fatalf("clip has %d tracks, %d units", len(p.tracks), len(p.units))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		tr, err := New(p.tracks[0], Config{}, func(*av.AudioFrame) {})
		if err != nil {
			b.Fatal(err)
		}
		for _, u := range p.units {
			tr.Write(u)
		}
		if s := tr.Stats(); s.Errors != 0 {
			b.Fatalf("stats %+v", s)
		}
		tr.Close()
	}
	perClip := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(100*perClip.Seconds()/seconds, "%core")
}
