package ingest

import (
	"bytes"
	"testing"

	"github.com/pion/rtp/codecs"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/events"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// TestVideoH265Passthrough: an H.265 stream without B-frames reaches the
// path as published, each picture cut once into RFC 7798 payloads that
// pion's depacketizer puts back together into the picture's NAL units,
// in both passthrough and auto (no viewer asked for H.264).
func TestVideoH265Passthrough(t *testing.T) {
	for _, mode := range []string{VideoPassthrough, VideoAuto} {
		t.Run(mode, func(t *testing.T) {
			r := newRig(t, Config{Video: func(string) VideoSettings { return VideoSettings{Mode: mode} }})
			c := newMemConn("live/hevc", 7, clip(t, "h265.ts"))
			viewers := make(chan *hub.Reader, 1)
			r.onEvent = func(e events.Event) {
				if e.Kind == events.PublisherConnected {
					viewers <- r.reader(t, "live/hevc", (*hub.Reader).AttachAV)
				}
			}
			if err := wait(t, r.serve(t, c)); err != nil {
				t.Fatalf("Serve = %v", err)
			}
			// The queue (128) holds the whole clip.
			video, _, _ := split(t, drain(<-viewers))
			if len(video) != 50 {
				t.Fatalf("%d pictures, want 50", len(video))
			}
			for i, au := range video {
				if au.Codec != av.CodecH265 || au.IDR != (i%30 == 0) {
					t.Fatalf("picture %d: codec %v IDR %v", i, au.Codec, au.IDR)
				}
				if got, want := depacketizeH265(t, au.Payloads), annexB(au.NALUs); !bytes.Equal(got, want) {
					t.Fatalf("picture %d: payloads depacketize to %d bytes, want its %d", i, len(got), len(want))
				}
			}
			for _, ap := range r.m.APIPaths() {
				if ap.Transcode != nil {
					t.Errorf("%s transcoded: %+v", ap.Name, ap.Transcode)
				}
			}
		})
	}
}

// depacketizeH265 is what a pion viewer makes of one picture's payloads:
// Annex-B NAL units.
func depacketizeH265(t *testing.T, payloads [][]byte) []byte {
	t.Helper()
	var d codecs.H265Depacketizer
	var out []byte
	for i, p := range payloads {
		b, err := d.Unmarshal(p)
		if err != nil {
			t.Fatalf("payload %d: %v", i, err)
		}
		out = append(out, b...)
	}
	return out
}

func annexB(nalus [][]byte) []byte {
	var out []byte
	for _, n := range nalus {
		out = append(out, 0, 0, 0, 1)
		out = append(out, n...)
	}
	return out
}
