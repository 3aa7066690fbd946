package tsdemux

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// OnStart marks the moment a consumer may go live: once, before any
// access unit or audio callback, and never for input that is not H.264 or
// H.265 in MPEG-TS.
func TestOnStart(t *testing.T) {
	junk := make([]byte, 256<<10)
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range junk {
		junk[i] = byte(rnd.Uint32())
	}
	cases := []struct {
		name   string
		input  []byte
		starts int
		err    error
	}{
		{"garbage", junk, 0, ErrNoPMT},
		{"H.265", readClip(t, "h265.ts"), 1, nil},
		{"H.265 with B-frames", readClip(t, "h265_aac.ts"), 1, ErrBFrames},
		{"H.264", readClip(t, "h264.ts"), 1, nil},
		{"H.264 with AAC", readClip(t, "h264_aac.ts"), 1, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var events []string
			res := demux(t, bytes.NewReader(c.input), func(d *Demuxer) {
				d.initLimit = 64 << 10
				d.onStart = func() error {
					events = append(events, "start")
					return nil
				}
				d.onAudioFound = func(av.AudioCodec) { events = append(events, "audio") }
				d.onAudio = func(av.AudioUnit) {}
			})
			if !errors.Is(res.err, c.err) {
				t.Fatalf("Run: %v, want %v", res.err, c.err)
			}
			starts := 0
			for _, e := range events {
				if e == "start" {
					starts++
				}
			}
			if starts != c.starts || (starts > 0 && events[0] != "start") {
				t.Fatalf("events %q, want %d start(s) first", events, c.starts)
			}
			if c.starts == 0 && len(res.aus) > 0 {
				t.Fatalf("%d access units without a start", len(res.aus))
			}
		})
	}

	// Its error ends Run before any output.
	refuse := errors.New("path taken")
	res := demux(t, bytes.NewReader(readClip(t, "h264.ts")), func(d *Demuxer) {
		d.onStart = func() error { return refuse }
	})
	if !errors.Is(res.err, refuse) || len(res.aus) != 0 || len(res.infos) != 0 {
		t.Fatalf("refused start: err %v, %d access units, %d infos", res.err, len(res.aus), len(res.infos))
	}
}
