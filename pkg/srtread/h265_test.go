package srtread

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/tsdemux"
)

const typeH265 = 0x24

// h265Frames is tsdemux's reading of its libx265 clip (50 pictures, IRAPs
// at 0 and 30).
func h265Frames(t *testing.T) []*av.AccessUnit {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "tsdemux", "testdata", "h265.ts"))
	if err != nil {
		t.Fatal(err)
	}
	return demuxAll(t, data)
}

func demuxAll(t *testing.T, data []byte) []*av.AccessUnit {
	t.Helper()
	var aus []*av.AccessUnit
	err := tsdemux.New(bytes.NewReader(data), tsdemux.Config{}).Run(context.Background(), func(au *av.AccessUnit) error {
		aus = append(aus, au)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return aus
}

// An SRT reader of an H.265 path gets H.265 as published (stream type
// 0x24, every picture's NAL units unchanged), and a publisher change from
// H.264 to H.265 starts a program whose video track says so.
func TestMuxH265(t *testing.T) {
	src := h265Frames(t)
	if len(src) != 50 {
		t.Fatalf("clip: %d pictures", len(src))
	}
	first := mkStream(0, 10000, 30, 30, nil)
	m, c := newTestMuxer(false)
	at := feed(t, m, first.frames, time.Now(), 10*time.Millisecond)
	at = at.Add(time.Second)
	var second []hub.Frame
	for _, au := range src {
		second = append(second, hub.Frame{Video: au, Gen: 1})
	}
	feed(t, m, second, at, 10*time.Millisecond)
	if err := m.out.Flush(); err != nil {
		t.Fatal(err)
	}

	rep := walkTS(t, c.bytes())
	if len(rep.ccErrors) != 0 {
		t.Fatalf("continuity errors: %v", rep.ccErrors)
	}
	if len(rep.pmts) != 2 || !slices.Equal(rep.pmts[0].streams, []pmtStream{{typeH264, videoPID}}) ||
		!slices.Equal(rep.pmts[1].streams, []pmtStream{{typeH265, videoPID}}) {
		t.Fatalf("PMTs %v, want H.264 then H.265 (0x24) on PID %d", rep.pmts, videoPID)
	}
	// What a reader of the second program gets back is the clip.
	got := demuxAll(t, secondProgram(t, c.bytes()))
	if len(got) != len(src) {
		t.Fatalf("%d H.265 pictures read back, want %d", len(got), len(src))
	}
	for i := range got {
		if got[i].Codec != av.CodecH265 || got[i].IDR != src[i].IDR || !slices.EqualFunc(got[i].NALUs, src[i].NALUs, bytes.Equal) {
			t.Fatalf("picture %d differs from the published one", i)
		}
	}
}

// secondProgram is the TS from the second PAT on: a reader that joins
// there sees only the H.265 program.
func secondProgram(t *testing.T, data []byte) []byte {
	t.Helper()
	pats := 0
	for off := 0; off+188 <= len(data); off += 188 {
		pkt := data[off : off+188]
		if pid := uint16(pkt[1]&0x1f)<<8 | uint16(pkt[2]); pid == 0 && pkt[1]&0x40 != 0 {
			if pats++; pats == 2 {
				return data[off:]
			}
		}
	}
	t.Fatal("no second PAT")
	return nil
}
