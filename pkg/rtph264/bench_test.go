package rtph264

import "testing"

// Sizes of a 720p x264 stream at about 2.5 Mbit/s: a ~60 KB IDR behind its
// parameter sets and ~8 KB P frames.
func benchAUs() map[string][][]byte {
	return map[string][][]byte{
		"IDR60KB": {sps, pps, nal(0x65, 60000)},
		"P8KB":    {nal(0x41, 8000)},
	}
}

func BenchmarkFragment(b *testing.B) {
	for name, nalus := range benchAUs() {
		b.Run(name, func(b *testing.B) {
			size := 0
			for _, n := range nalus {
				size += len(n)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				Fragment(nalus, DefaultMaxPayload)
			}
		})
	}
}
