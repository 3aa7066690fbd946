package srtread

import (
	"log/slog"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// BenchmarkMuxSecond muxes one second of a 2.5 Mbit/s 30 fps stream with
// AAC (one IDR, 29 pictures, 47 audio units) into SRT messages: the work
// each SRT reader costs per second of stream, since every reader has its
// own timeline and continuity counters.
func BenchmarkMuxSecond(b *testing.B) {
	aac := aacTrack(b)
	s := mkStream(0, 0, 30, 30, aac)
	for _, f := range s.frames {
		if f.Video == nil {
			continue
		}
		size := 8 << 10
		if f.Video.IDR {
			size = 60 << 10
		}
		slice := make([]byte, size)
		slice[0] = f.Video.NALUs[len(f.Video.NALUs)-1][0]
		f.Video.NALUs[len(f.Video.NALUs)-1] = slice
	}
	m := newMuxer(newPacketizer(func([]byte) error { return nil }), slog.New(slog.DiscardHandler), func() bool { return true })
	at := time.Now()
	b.ReportAllocs()
	b.SetBytes(int64(2500000 / 8))
	for i := range b.N {
		for _, f := range s.frames {
			// Each second continues the last one's timeline.
			g := f
			if f.Video != nil {
				au := *f.Video
				au.PTS += int64(i) * av.ClockRate
				g = hub.Frame{Video: &au}
			} else {
				u := *f.Source
				u.PTS += int64(i) * av.ClockRate
				g = hub.Frame{Source: &u}
			}
			if err := m.write(g, at); err != nil {
				b.Fatal(err)
			}
		}
		if err := m.out.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}
