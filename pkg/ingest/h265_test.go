package ingest

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtp/codecs"

	"github.com/srtwhep/srtwhep/internal/testkit"
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
			if lines := r.logs.Lines("video transcoded"); len(lines) != 0 {
				t.Errorf("transcoded: %q", lines)
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

// TestVideoH265Rendition: with video: auto an H.265 path keeps its
// original for the viewers that offered H.265 and, once a viewer that did
// not comes, transcodes to H.264 for it alone, on the path's H.264
// rendition; the log says why once, with the fix.
func TestVideoH265Rendition(t *testing.T) {
	r := newRig(t, Config{})
	data := clip(t, "h265.ts")
	c := newMemConn("live/hevc", 8, data)
	starts := videoPES(data)
	c.pauseAt = starts[10]
	c.holdEOF = make(chan struct{})
	viewers := make(chan *hub.Reader, 1)
	r.onEvent = func(e events.Event) {
		if e.Kind == events.PublisherConnected {
			viewers <- r.reader(t, "live/hevc", (*hub.Reader).AttachAV)
		}
	}
	done := r.serve(t, c)
	<-c.paused
	orig := <-viewers
	if !r.hub.HasRendition("live/hevc") {
		t.Fatal("no H.264 rendition for viewers without H.265")
	}
	if lines := r.logs.Lines("video transcoded"); len(lines) != 0 {
		t.Fatalf("transcoding before any viewer needs it: %q", lines)
	}
	for _, ap := range r.m.APIPaths() {
		if ap.Transcode != nil {
			t.Errorf("/v1/paths shows %s transcoded before any viewer needs it: %+v", ap.Name, ap.Transcode)
		}
	}
	h264, err := r.hub.AddTranscodedReader("live/hevc", "h264-viewer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h264.Close)
	if info := h264.Info(); info.Codec != "H264" || info.Width != 320 {
		t.Errorf("rendition info %+v, want H.264 320 wide", info)
	}
	h264.AttachAV()
	close(c.resume)
	var transcoded []*av.AccessUnit
	testkit.WaitFor(t, 30*time.Second, "the transcoded pictures", func() bool {
		v, _, _ := split(t, drain(h264))
		transcoded = append(transcoded, v...)
		return len(transcoded) >= 30 // of the 40 from picture 10 on, less the encoder's trail
	})
	for _, ap := range r.m.APIPaths() {
		if ap.Name == "live/hevc" && (ap.Transcode == nil || ap.Transcode.Reason != reasonH265.why) {
			t.Errorf("/v1/paths transcode: %+v, want the H.265 reason", ap.Transcode)
		}
	}
	close(c.holdEOF)
	if err := wait(t, done); err != nil {
		t.Fatalf("Serve = %v", err)
	}
	checkTranscoded(t, transcoded, 0)
	for i, au := range transcoded {
		if au.Codec != av.CodecH264 {
			t.Fatalf("transcoded picture %d: codec %v", i, au.Codec)
		}
	}
	original, _, _ := split(t, drain(orig))
	if len(original) != 50 {
		t.Fatalf("the H.265 viewer got %d pictures, want all 50", len(original))
	}
	for i, au := range original {
		if au.Codec != av.CodecH265 {
			t.Fatalf("original picture %d: codec %v", i, au.Codec)
		}
	}
	lines := r.logs.Lines("video transcoded to H.264 for browsers", "H.265 to a viewer that did not offer H.265")
	if len(lines) != 1 || !strings.Contains(lines[0], "libx264 -bf 0") {
		t.Errorf("want one transcoding line with the reason and the fix, got %q", lines)
	}
}
