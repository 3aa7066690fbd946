package tsdemux

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// Clean ffmpeg clip: 50 pictures at 25 fps, GOP 30, no B-frames.

func TestRealClip(t *testing.T) {
	clip := readClip(t, "h264.ts")
	res := demux(t, bytes.NewReader(clip))
	if res.err != nil {
		t.Fatalf("Run: %v", res.err)
	}
	if len(res.aus) != 50 {
		t.Fatalf("got %d access units, want 50", len(res.aus))
	}
	for i, au := range res.aus {
		if au.IDR != (i == 0 || i == 30) {
			t.Errorf("AU %d: IDR=%v", i, au.IDR)
		}
		if i > 0 && au.PTS-res.aus[i-1].PTS != 3600 {
			t.Errorf("AU %d: PTS step %d, want 3600 (25 fps)", i, au.PTS-res.aus[i-1].PTS)
		}
	}
	if got := naluTypes(res.aus[30]); got[0] != h264.NALUTypeSPS || got[1] != h264.NALUTypePPS {
		t.Errorf("second IDR starts with %v", got)
	}
	want := Stats{AccessUnits: 50, IDRs: 2, Bytes: uint64(len(clip))}
	if res.stats != want {
		t.Errorf("stats %+v, want %+v", res.stats, want)
	}
	wantInfo := []av.StreamInfo{{Codec: "H264", Profile: "Constrained Baseline", Width: 320, Height: 240, FPS: 25, ProfileLevelID: "42c00d"}}
	if !slices.Equal(res.infos, wantInfo) {
		t.Errorf("OnInfo got %+v, want %+v", res.infos, wantInfo)
	}
	if w := res.logs.level(slog.LevelWarn); len(w) != 0 {
		t.Errorf("unexpected warnings: %q", w)
	}
}

func TestParameterSetsInserted(t *testing.T) {
	b := newTSBuilder(t, false)
	b.au(0, 0, testSPS, testPPS, testSEI, slice(true, 3, sliceI, 0))
	b.au(3000, 3000, testFiller, slice(false, 2, sliceP, 1))
	b.au(6000, 6000, slice(true, 3, sliceI, 0))            // IDR alone
	b.au(9000, 9000, testSPS, slice(true, 3, sliceI, 0))   // IDR with SPS only
	b.au(12000, 12000, testPPS, slice(true, 3, sliceI, 0)) // IDR with PPS only
	res := demux(t, bytes.NewReader(b.bytes()))
	if res.err != nil {
		t.Fatal(res.err)
	}
	I, P, S, Q, E := h264.NALUTypeIDR, h264.NALUTypeNonIDR, h264.NALUTypeSPS, h264.NALUTypePPS, h264.NALUTypeSEI
	want := [][]h264.NALUType{{S, Q, E, I}, {P}, {S, Q, I}, {S, Q, I}, {S, Q, I}}
	if len(res.aus) != len(want) {
		t.Fatalf("got %d AUs, want %d", len(res.aus), len(want))
	}
	for i, au := range res.aus {
		if got := naluTypes(au); !slices.Equal(got, want[i]) {
			t.Errorf("AU %d: NALUs %v, want %v", i, got, want[i])
		}
	}
	if !bytes.Equal(res.aus[2].NALUs[0], testSPS) || !bytes.Equal(res.aus[2].NALUs[1], testPPS) {
		t.Error("inserted parameter sets are not the cached ones")
	}
	if res.stats.DecodeErrors != 0 || res.stats.DroppedAUs != 0 {
		t.Errorf("stats %+v", res.stats)
	}
	wantInfo := av.StreamInfo{Codec: "H264", Profile: "High", Width: 1920, Height: 1080, FPS: 60, ProfileLevelID: "64002a"}
	if len(res.infos) != 1 || res.infos[0] != wantInfo {
		t.Errorf("infos %+v, want [%+v]", res.infos, wantInfo)
	}
}

// Nothing may come out before an IDR that can be decoded: P pictures and an

// IDR whose SPS/PPS were never seen are dropped and counted.

func TestWaitsForDecodableIDR(t *testing.T) {
	b := newTSBuilder(t, false)
	b.au(0, 0, slice(false, 2, sliceP, 5))
	b.au(3000, 3000, slice(false, 2, sliceP, 6))
	b.au(6000, 6000, slice(true, 3, sliceI, 0)) // no SPS/PPS known yet
	b.au(9000, 9000, slice(false, 2, sliceP, 1))
	b.gop(12000, 3, true)
	res := demux(t, bytes.NewReader(b.bytes()))
	if res.err != nil {
		t.Fatal(res.err)
	}
	if len(res.aus) != 3 || res.aus[0].PTS != 12000 {
		t.Fatalf("got %d AUs starting at %d, want 3 starting at the IDR at 12000", len(res.aus), res.aus[0].PTS)
	}
	if res.stats.DroppedAUs != 4 || res.stats.AccessUnits != 3 || res.stats.IDRs != 1 {
		t.Errorf("stats %+v", res.stats)
	}
}

// A reference picture that never arrives (whole PES lost) makes every later

// picture of the GOP undecodable: output pauses until the next IDR.

// Lost TS packets in a real stream: astits discards the damaged PES, the

// frame_num gap gives it away, and the stream resumes at the next IDR.

// assertResumesAtIDR checks that damaged output is the clean output with

// holes, each hole followed by an IDR, and that the last GOP is complete.

// Pictures are matched by content: PTS starts at 0 at the first picture

// read, which damage may have removed, so only PTS differences compare.

// Garbage between TS packets: mediacommon resyncs on 0x47. Garbage without

// sync bytes loses nothing, so every picture must come out; random garbage

// can fake a sync byte and cost packets, so output may pause until an IDR.

// PTS is unwrapped across the 33-bit wrap, and jumps are smoothed so the

// output never goes back (RTP timestamps derive from it).

func TestPTSUnwrapAndJumps(t *testing.T) {
	b := newTSBuilder(t, true)
	start := int64(1<<33 - 5*3000)
	pts := b.gop(start, 10, true) // crosses the wrap
	if err := b.w.WriteMPEG4Audio(b.aac, start, [][]byte{{0x21, 0x10, 0x04}}); err != nil {
		t.Fatal(err)
	}
	b.gop(1000, 3, true)         // back by about 2^33
	b.gop(pts+20*90000, 3, true) // forward jump far beyond 5 s
	res := demux(t, bytes.NewReader(b.bytes()))
	if res.err != nil {
		t.Fatal(res.err)
	}
	if len(res.aus) != 16 {
		t.Fatalf("got %d AUs, want 16", len(res.aus))
	}
	for i := 1; i < len(res.aus); i++ {
		if d := res.aus[i].PTS - res.aus[i-1].PTS; d != 3000 {
			t.Errorf("AU %d: step %d, want 3000", i, d)
		}
	}
	if res.stats.DecodeErrors != 2 {
		t.Errorf("stats %+v, want 2 decode errors (the jumps)", res.stats)
	}
}

func TestInfoChange(t *testing.T) {
	b := newTSBuilder(t, false)
	pts := b.gop(0, 2, true)
	b.au(pts, pts, testSPS2, testPPS, slice(true, 3, sliceI, 0))
	b.au(pts+3000, pts+3000, testSPS2, testPPS, slice(true, 3, sliceI, 0))
	res := demux(t, bytes.NewReader(b.bytes()))
	if res.err != nil {
		t.Fatal(res.err)
	}
	if len(res.infos) != 2 || res.infos[0].Width != 1920 || res.infos[1].Width != 352 || res.infos[1].Height != 288 {
		t.Errorf("infos %+v", res.infos)
	}
}

func TestEmitError(t *testing.T) {
	stop := errors.New("hub closed")
	d := New(bytes.NewReader(readClip(t, "h264.ts")), Config{})
	n := 0
	err := d.Run(context.Background(), func(*av.AccessUnit) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 || d.Stats().AccessUnits != 3 {
		t.Errorf("Run = %v after %d AUs, want the emit error after 3", err, n)
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := New(strings.NewReader("x"), Config{}).Run(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before Run: got %v", err)
	}

	// The caller's contract: cancel, then close the reader to unblock Read.
	clip := readClip(t, "h264.ts")
	pr, pw := io.Pipe()
	go func() {
		// Returns when Run has read it all or when the reader is closed;
		// pw is never closed, so Run would block for more without cancel.
		_, _ = pw.Write(clip[:len(clip)/2])
	}()
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- New(pr, Config{}).Run(ctx, func(*av.AccessUnit) error {
			if ctx.Err() == nil {
				cancel()
				_ = pr.Close()
			}
			return nil
		})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel + close")
	}
}

// BenchmarkDemux measures demux throughput on the clean clip (bytes/s is
// the TS rate one publisher goroutine can sustain).
func BenchmarkDemux(b *testing.B) {
	clip := readClip(b, "h264.ts")
	b.SetBytes(int64(len(clip)))
	b.ReportAllocs()
	for b.Loop() {
		d := New(bytes.NewReader(clip), Config{})
		if err := d.Run(context.Background(), func(*av.AccessUnit) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
