package tsdemux

import (
	"bytes"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/av"
)

func TestLostReferencePicture(t *testing.T) {
	b := newTSBuilder(t, false)
	pts := b.gop(0, 4, true)
	b.au(pts, pts, slice(false, 2, sliceP, 5)) // frame_num 4 lost
	b.au(pts+3000, pts+3000, slice(false, 2, sliceP, 6))
	b.au(pts+6000, pts+6000, slice(false, 0, sliceP, 7)) // non-reference: 7 follows 6 fine
	b.gop(pts+9000, 2, false)
	res := demux(t, bytes.NewReader(b.bytes()))
	if res.err != nil {
		t.Fatal(res.err)
	}
	var got []int64
	for _, au := range res.aus {
		got = append(got, au.PTS)
	}
	want := []int64{0, 3000, 6000, 9000, pts + 9000, pts + 12000}
	if !slices.Equal(got, want) {
		t.Errorf("PTS %v, want %v", got, want)
	}
	if res.stats.DecodeErrors != 1 || res.stats.DroppedAUs != 3 {
		t.Errorf("stats %+v, want 1 decode error and 3 dropped", res.stats)
	}
	w := res.logs.level(slog.LevelWarn)
	if len(w) != 1 || !strings.Contains(w[0], "errors=1") || !strings.Contains(w[0], "frame_num 5, expected 4") {
		t.Errorf("warnings %q, want one summary naming the frame_num gap", w)
	}
}

func TestLostPackets(t *testing.T) {
	clip := readClip(t, "h264.ts")
	clean := demux(t, bytes.NewReader(clip))
	// Drop the second packet of the 10th video PES (PID 256).
	var out []byte
	starts, dropped := 0, false
	for off := 0; off+188 <= len(clip); off += 188 {
		p := clip[off : off+188]
		pid := int(p[1]&0x1f)<<8 | int(p[2])
		if pid == 256 && p[1]&0x40 != 0 {
			starts++
		}
		if pid == 256 && starts == 10 && p[1]&0x40 == 0 && !dropped {
			dropped = true
			continue
		}
		out = append(out, p...)
	}
	res := demux(t, bytes.NewReader(out))
	if res.err != nil {
		t.Fatal(res.err)
	}
	assertResumesAtIDR(t, clean.aus, res.aus)
	// Picture 9 is lost, 10..29 cannot be decoded, 30..49 (the last GOP) pass.
	if len(res.aus) != 9+20 || res.stats.DecodeErrors == 0 || res.stats.DroppedAUs != 20 {
		t.Errorf("got %d AUs (want 29), stats %+v", len(res.aus), res.stats)
	}
}

func assertResumesAtIDR(t *testing.T, clean, got []*av.AccessUnit) {
	t.Helper()
	j := 0
	var offset int64
	for i, au := range got {
		skipped := false
		for j < len(clean) && !slices.EqualFunc(au.NALUs, clean[j].NALUs, bytes.Equal) {
			j++
			skipped = true
		}
		if j == len(clean) {
			t.Fatalf("AU %d (PTS %d) is not in the clean output", i, au.PTS)
		}
		if skipped && !au.IDR {
			t.Errorf("AU %d (PTS %d) follows a hole but is not an IDR", i, au.PTS)
		}
		if off := au.PTS - clean[j].PTS; i == 0 {
			offset = off
		} else if off != offset {
			t.Errorf("AU %d: PTS %d is %d off the clean timeline, earlier AUs %d", i, au.PTS, off, offset)
		}
		j++
	}
	if j != len(clean) {
		t.Errorf("output ends %d AUs early", len(clean)-j)
	}
}

func TestGarbageBetweenPackets(t *testing.T) {
	clip := readClip(t, "h264.ts")
	clean := demux(t, bytes.NewReader(clip))
	for _, tc := range []struct {
		name     string
		noSync   bool
		complete bool
	}{
		{"without sync bytes", true, true},
		{"random", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var out []byte
			n := len(clip) / 188
			for i := range n {
				out = append(out, clip[i*188:(i+1)*188]...)
				if i > 5 && i < n/3 && i%17 == 0 {
					g := make([]byte, 1+rng.IntN(300))
					for k := range g {
						g[k] = byte(rng.UintN(256))
						if tc.noSync && g[k] == 0x47 {
							g[k] = 0x48
						}
					}
					out = append(out, g...)
				}
			}
			res := demux(t, bytes.NewReader(out))
			if res.err != nil {
				t.Fatal(res.err)
			}
			if res.stats.DecodeErrors == 0 {
				t.Fatal("garbage produced no decode errors")
			}
			assertResumesAtIDR(t, clean.aus, res.aus)
			if tc.complete && len(res.aus) != len(clean.aus) {
				t.Errorf("got %d AUs, want all %d", len(res.aus), len(clean.aus))
			}
			t.Logf("%d AUs, stats %+v", len(res.aus), res.stats)
			w := res.logs.level(slog.LevelWarn)
			if len(w) == 0 || len(w) > 2 || !strings.Contains(w[0], "decode errors") || !strings.Contains(w[0], "last_error=") {
				t.Errorf("want one or two summarised warnings, got %q", w)
			}
		})
	}
}

func TestTruncated(t *testing.T) {
	clip := readClip(t, "h264.ts")
	res := demux(t, bytes.NewReader(clip[:len(clip)*2/3+77]))
	if res.err != nil {
		t.Fatalf("Run: %v", res.err)
	}
	if len(res.aus) < 20 || len(res.aus) >= 50 {
		t.Errorf("got %d AUs from two thirds of the clip", len(res.aus))
	}

	res = demux(t, bytes.NewReader(clip[:300]))
	if !errors.Is(res.err, ErrNoPMT) {
		t.Errorf("300 bytes: got %v, want ErrNoPMT", res.err)
	}
}

func TestNoPMTLimit(t *testing.T) {
	junk := bytes.Repeat([]byte{0x00, 0x11, 0x22}, 100_000)
	res := demux(t, bytes.NewReader(junk), func(d *Demuxer) { d.initLimit = 64 << 10 })
	if !errors.Is(res.err, ErrNoPMT) || !strings.Contains(res.err.Error(), "none in the first 65") {
		t.Errorf("got %v, want ErrNoPMT after the limit", res.err)
	}
	if res.stats.Bytes > 70<<10 {
		t.Errorf("read %d bytes past a 64 KiB limit", res.stats.Bytes)
	}
}
