package audio

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/prometheus/procfs"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// rssKeep holds every transcoder the benchmark made, open until the
// process exits. Closed, their memory would sit in glibc's free lists,
// where the transcoders of the next call (-count) would find it and
// appear to cost nothing.
var rssKeep []*Transcoder

// rssPaths is how many transcoders one measurement adds: enough that the
// per-path figure stands well above /proc's kB granularity and the noise
// of the Go heap.
const rssPaths = 32

// BenchmarkTranscoderRSS measures the resident memory one more transcoding
// path costs the server: libavcodec's AAC decoder, libswresample and
// libopus keep their state in C memory, which the Go heap profile does not
// show. Each transcoder is fed real AAC 128 kbit/s stereo at 44.1 kHz so
// every buffer it will ever need is allocated, and all of them stay open,
// as live paths do.
func BenchmarkTranscoderRSS(b *testing.B) {
	const seconds = 3
	p := runPipeline(b, ffmpegTS(b, seconds, 44100, "-c:a", "aac", "-b:a", "128k", "-ac", "2"), Config{})
	if len(p.tracks) != 1 || len(p.units) < seconds*43 {
		b.Fatalf("clip has %d tracks, %d units", len(p.tracks), len(p.units))
	}
	// glibc gives each thread that allocates its own arena; cgo calls from
	// wandering threads would then scatter the paths' memory over arenas
	// whose first touch costs far more than the allocation itself.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	proc, err := procfs.Self()
	if err != nil {
		b.Fatal(err)
	}
	feed := func() {
		tr, err := New(p.tracks[0], Config{}, func(*av.AudioFrame) {})
		if err != nil {
			b.Fatal(err)
		}
		rssKeep = append(rssKeep, tr)
		for _, u := range p.units {
			tr.Write(u)
		}
		if s := tr.Stats(); s.Errors != 0 || s.FramesOut == 0 {
			b.Fatalf("stats %+v", s)
		}
	}
	// The first transcoder pages in the codec libraries and their static
	// tables, which every path shares: that is not a per-path cost.
	feed()

	var added float64
	for b.Loop() {
		before := settledRSS(b, proc)
		for range rssPaths {
			feed()
		}
		added += float64(settledRSS(b, proc) - before)
	}
	b.ReportMetric(added/float64(b.N)/rssPaths, "rss-bytes/path")
}

// settledRSS is the process's resident set after the Go heap has given
// back what it can, so garbage from feeding does not count as a path's.
func settledRSS(b *testing.B, proc procfs.Proc) int64 {
	runtime.GC()
	debug.FreeOSMemory()
	st, err := proc.NewStatus()
	if err != nil {
		b.Fatal(err)
	}
	return int64(st.VmRSS)
}
