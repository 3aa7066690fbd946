package tsdemux

import (
	"bytes"
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// TestFuzzCorpusDemux writes FuzzDemux's checked-in corpus when
// SRTWHEP_WRITE_FUZZ_CORPUS is set: the start of each ffmpeg clip (its
// tables and first pictures; the whole clips are f.Add seeds already and
// would only make the files big) and the builder streams of the unit
// tests (PTS wrap, B-frames, each audio codec).
func TestFuzzCorpusDemux(t *testing.T) {
	var seeds [][]any
	for _, name := range fuzzClips {
		clip := readClip(t, name)
		seeds = append(seeds, []any{clip[:min(len(clip), 24*188)]})
	}
	b := newTSBuilder(t, true)
	pts := b.gop(1<<33-6000, 4, true)
	b.au(pts, pts, slice(false, 2, sliceP, 9))
	b.gop(pts+3000, 3, false)
	b.au(pts+20000, pts+12000, slice(false, 0, sliceB, 3))
	seeds = append(seeds, []any{b.bytes()})
	for _, tc := range audioCases {
		track := tc.track
		b := newAVBuilder(t, &track)
		tc.write(b, 1<<33-100)
		b.gop(1<<33-3000, 2, true)
		tc.write(b, 4000)
		seeds = append(seeds, []any{b.bytes()})
	}
	seeds = append(seeds, []any{[]byte{}}, []any{bytes.Repeat([]byte{0x47}, 188*3)})
	testkit.SeedCorpus(t, "FuzzDemux", seeds...)
}
