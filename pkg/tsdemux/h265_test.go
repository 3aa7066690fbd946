package tsdemux

import (
	"bytes"
	"testing"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h265"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// ffmpeg's libx265 clip (gen.sh: 2 s at 25 fps, keyint 30, no B-frames)
// comes out as it went in: 50 H.265 pictures, IRAPs at 0 and 30 with
// their parameter sets, and the SPS described for the answer's fmtp.
func TestH265(t *testing.T) {
	res := demux(t, bytes.NewReader(readClip(t, "h265.ts")))
	if res.err != nil {
		t.Fatal(res.err)
	}
	if len(res.aus) != 50 {
		t.Fatalf("%d access units, want 50", len(res.aus))
	}
	for i, au := range res.aus {
		if au.Codec != av.CodecH265 {
			t.Fatalf("AU %d: codec %v", i, au.Codec)
		}
		if want := i%30 == 0; au.IDR != want {
			t.Errorf("AU %d: IDR %v, want %v", i, au.IDR, want)
		}
	}
	want := av.StreamInfo{Codec: "H265", Profile: "Main", Width: 320, Height: 240, FPS: 25,
		H265: av.H265Params{ProfileID: 1, TierFlag: 0, LevelID: res.infos[0].H265.LevelID}}
	if len(res.infos) != 1 || res.infos[0] != want || want.H265.LevelID == 0 {
		t.Fatalf("infos %+v, want one %+v with a level", res.infos, want)
	}
	if s := res.stats; s.AccessUnits != 50 || s.IDRs != 2 || s.DecodeErrors != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// An encoder that sends VPS, SPS and PPS only once (or in their own PES)
// still gives every IRAP picture its parameter sets, so a viewer can
// start at any keyframe; pictures before the first IRAP are held back.
func TestH265ParameterSetsRepeated(t *testing.T) {
	src := demux(t, bytes.NewReader(readClip(t, "h265.ts")))
	if src.err != nil || len(src.aus) != 50 {
		t.Fatalf("source: %v, %d units", src.err, len(src.aus))
	}
	var buf bytes.Buffer
	track := &mpegts.Track{Codec: &mpegts.CodecH265{}}
	w := mpegts.Writer{W: &buf, Tracks: []*mpegts.Track{track}}
	if err := w.Initialize(); err != nil {
		t.Fatal(err)
	}
	write := func(pts int64, nalus [][]byte) {
		t.Helper()
		if err := w.WriteH265(track, pts, pts, nalus); err != nil {
			t.Fatal(err)
		}
	}
	// Two P pictures before any IRAP: dropped.
	write(0, src.aus[1].NALUs)
	write(3600, src.aus[2].NALUs)
	// Parameter sets alone, then every picture without them.
	var params [][]byte
	for _, n := range src.aus[0].NALUs {
		if t := h265Type(n); t >= h265.NALUType_VPS_NUT && t <= h265.NALUType_PPS_NUT {
			params = append(params, n)
		}
	}
	write(7200, params)
	for i, au := range src.aus {
		var rest [][]byte
		for _, n := range au.NALUs {
			if t := h265Type(n); t < h265.NALUType_VPS_NUT || t > h265.NALUType_PPS_NUT {
				rest = append(rest, n)
			}
		}
		write(10800+int64(i)*3600, rest)
	}

	res := demux(t, &buf) // checkInvariants: VPS, SPS, PPS before every IRAP slice
	if res.err != nil {
		t.Fatal(res.err)
	}
	if len(res.aus) != 50 || res.stats.IDRs != 2 || res.stats.DroppedAUs != 2 {
		t.Fatalf("%d units, stats %+v; want 50 with 2 IRAPs, 2 dropped before the first", len(res.aus), res.stats)
	}
	for _, i := range []int{0, 30} {
		if got := res.aus[i].NALUs[:3]; !bytes.Equal(got[0], params[0]) || !bytes.Equal(got[1], params[1]) || !bytes.Equal(got[2], params[2]) {
			t.Errorf("IRAP %d does not start with the stream's VPS, SPS, PPS", i)
		}
	}
}

// The IRAP types are exactly those a decoder can start at.
func TestIsIRAP(t *testing.T) {
	for typ := range h265.NALUType(64) {
		want := typ >= 16 && typ <= 23
		if isIRAP(typ) != want {
			t.Errorf("isIRAP(%d) = %v", typ, !want)
		}
	}
}

// Parameter sets out of order in an IRAP picture are put in the order a
// decoder starting there needs (checkInvariants checks it).
func TestH265ParameterSetsReordered(t *testing.T) {
	src := demux(t, bytes.NewReader(readClip(t, "h265.ts")))
	if src.err != nil || len(src.aus) == 0 {
		t.Fatalf("source: %v", src.err)
	}
	first := src.aus[0].NALUs
	if len(first) < 4 {
		t.Fatalf("first picture has %d NAL units", len(first))
	}
	// PPS, slices, then VPS and SPS behind them.
	mixed := append([][]byte{first[2]}, first[3:]...)
	mixed = append(mixed, first[0], first[1])
	var buf bytes.Buffer
	track := &mpegts.Track{Codec: &mpegts.CodecH265{}}
	w := mpegts.Writer{W: &buf, Tracks: []*mpegts.Track{track}}
	if err := w.Initialize(); err != nil {
		t.Fatal(err)
	}
	for i, au := range [][][]byte{mixed, src.aus[1].NALUs} {
		if err := w.WriteH265(track, int64(i)*3600, int64(i)*3600, au); err != nil {
			t.Fatal(err)
		}
	}
	res := demux(t, &buf)
	if res.err != nil || len(res.aus) != 2 || !res.aus[0].IDR {
		t.Fatalf("%v, %d units", res.err, len(res.aus))
	}
}
