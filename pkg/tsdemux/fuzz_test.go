package tsdemux

import (
	"bytes"
	"testing"
)

// fuzzClips are the ffmpeg clips that seed FuzzDemux.
var fuzzClips = []string{"h264.ts", "h264_aac.ts", "h264_bframes.ts", "h265_aac.ts", "h265.ts"}

// FuzzDemux feeds arbitrary bytes through Run: it must never panic, and
// whatever comes out must keep the invariants consumers rely on (checked
// by demux).
func FuzzDemux(f *testing.F) {
	for _, name := range fuzzClips {
		clip := readClip(f, name)
		f.Add(clip)
		f.Add(clip[:len(clip)/3+5])
	}
	b := newTSBuilder(f, true)
	pts := b.gop(1<<33-6000, 4, true)
	b.au(pts, pts, slice(false, 2, sliceP, 9))
	b.gop(pts+3000, 3, false)
	b.au(pts+20000, pts+12000, slice(false, 0, sliceB, 3))
	f.Add(b.bytes())
	for _, tc := range audioCases {
		track := tc.track
		b := newAVBuilder(f, &track)
		tc.write(b, 1<<33-100)
		b.gop(1<<33-3000, 2, true)
		tc.write(b, 4000)
		f.Add(b.bytes())
	}
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0x47}, 188*3))

	f.Fuzz(func(t *testing.T, data []byte) {
		var out audioOut
		res := demux(t, bytes.NewReader(data), func(d *Demuxer) { d.initLimit = 1 << 20 }, withAudio(&out))
		for i := 1; i < len(out.units); i++ {
			if out.units[i].PTS < out.units[i-1].PTS {
				t.Errorf("audio unit %d: PTS %d after %d", i, out.units[i].PTS, out.units[i-1].PTS)
			}
		}
		if res.stats.Bytes != uint64(len(data)) && res.err == nil {
			t.Errorf("Run returned nil after reading %d of %d bytes", res.stats.Bytes, len(data))
		}
	})
}
