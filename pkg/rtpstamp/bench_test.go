package rtpstamp

import "testing"

// Sizes of a 720p x264 stream at about 2.5 Mbit/s: a ~60 KB IDR behind its
// parameter sets and ~8 KB P frames.
var benchSizes = map[string]int{"IDR60KB": 60018, "P8KB": 8000}

// BenchmarkStamp measures the per-viewer cost of one access unit; ns/packet
// is the number to multiply by packets per second and viewers.
func BenchmarkStamp(b *testing.B) {
	for name, size := range benchSizes {
		b.Run(name, func(b *testing.B) {
			au := accessUnit(0, size)
			s := NewStamper(1, 96, 0, 0)
			dst := s.Stamp(nil, au, false)
			b.ReportAllocs()
			for b.Loop() {
				au.PTS += 3000
				dst = s.Stamp(dst, au, false)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(au.Payloads)), "ns/packet")
		})
	}
}

// BenchmarkStampMarshal adds writing each packet into a reused send buffer,
// the shape of an owned send path.
func BenchmarkStampMarshal(b *testing.B) {
	au := accessUnit(0, 60018)
	s := NewStamper(1, 96, 0, 0)
	dst := s.Stamp(nil, au, false)
	buf := make([]byte, 1500)
	b.ReportAllocs()
	for b.Loop() {
		au.PTS += 3000
		dst = s.Stamp(dst, au, false)
		for i := range dst {
			MarshalTo(buf, &dst[i])
		}
	}
}
