package tsdemux

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit/tsfixture"
	"github.com/srtwhep/srtwhep/pkg/av"
)

func TestNoH264(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"opus only", tsfixture.OpusOnly(t), "no H.264 or H.265 video track; found: Opus — publish with -c:v libx264 -bf 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := demux(t, bytes.NewReader(tc.data))
			if !errors.Is(res.err, ErrNoH264) || res.err.Error() != tc.want {
				t.Errorf("got %v\nwant %s", res.err, tc.want)
			}
		})
	}
}

func TestBFrames(t *testing.T) {
	reordered := newTSBuilder(t, false) // PTS back in decode order, slices typed P
	reordered.au(6000, 0, testSPS, testPPS, slice(true, 3, sliceI, 0))
	reordered.au(12000, 3000, slice(false, 2, sliceP, 1))
	reordered.au(9000, 6000, slice(false, 0, sliceP, 2))
	bslice := newTSBuilder(t, false) // a B slice, timestamps unremarkable
	bslice.gop(0, 3, true)
	bslice.au(9000, 9000, slice(false, 0, sliceB, 3))
	for _, tc := range []struct {
		name   string
		data   []byte
		reason string
	}{
		{"ffmpeg -bf 2", readClip(t, "h264_bframes.ts"), ""},
		{"pts backwards", reordered.bytes(), "PTS goes backwards"},
		{"B slice", bslice.bytes(), "B slice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := demux(t, bytes.NewReader(tc.data))
			if !errors.Is(res.err, ErrBFrames) || !strings.Contains(res.err.Error(), tc.reason) {
				t.Fatalf("got %v, want ErrBFrames (%s)", res.err, tc.reason)
			}
			if !strings.Contains(res.err.Error(), "encode with -bf 0 (ffmpeg) or set B-frames to 0 in OBS") {
				t.Errorf("error lacks the fix: %v", res.err)
			}
			if res.stats.BFramesDropped != 1 {
				t.Errorf("stats %+v", res.stats)
			}
			if w := res.logs.level(slog.LevelWarn); len(w) != 1 || !strings.Contains(w[0], "B-frames") {
				t.Errorf("want one B-frame warning, got %q", w)
			}
		})
	}
}

// With audio off (no OnAudio) an audio track is listed and left alone:
// no warning, video untouched.
func TestAudioOff(t *testing.T) {
	res := demux(t, bytes.NewReader(readClip(t, "h264_aac.ts")))
	if res.err != nil {
		t.Fatal(res.err)
	}
	if len(res.aus) != 25 || res.stats.DecodeErrors != 0 || res.stats.AudioUnits != 0 {
		t.Errorf("got %d AUs (want 25), stats %+v", len(res.aus), res.stats)
	}
	if w := res.logs.level(slog.LevelWarn); len(w) != 0 {
		t.Errorf("unexpected warnings: %q", w)
	}
	info := strings.Join(res.logs.level(slog.LevelInfo), "\n")
	if !strings.Contains(info, "audio is off") || !strings.Contains(info, "MPEG-4 Audio (AAC) (PID 257)") {
		t.Errorf("want the AAC track listed as ignored, got %q", info)
	}
}

// With a consumer that transcodes (OnBFrames says yes), a stream with
// B-frames plays on: every picture comes out in decode order with its own
// PTS, and nothing is refused or warned about.
// h264_bpyramid.ts is x264's default of 3 B-frames with a B-pyramid,
// whose non-reference B-frames have PTS = DTS.
func TestBFramesAccepted(t *testing.T) {
	for _, clip := range []string{"h264_bframes.ts", "h264_bpyramid.ts"} {
		t.Run(clip, func(t *testing.T) { testBFramesAccepted(t, clip) })
	}
}

func testBFramesAccepted(t *testing.T, clip string) {
	asked := 0
	// Not demux(): its invariants include a PTS that never goes back,
	// which is exactly what B-frames in decode order break.
	res := result{logs: &logSink{}}
	d := New(bytes.NewReader(readClip(t, clip)), Config{Logger: slog.New(sinkHandler{s: res.logs}),
		OnBFrames: func() bool { asked++; return true }})
	res.err = d.Run(t.Context(), func(au *av.AccessUnit) error {
		res.aus = append(res.aus, au)
		return nil
	})
	res.stats = d.Stats()
	if res.err != nil || asked != 1 || res.stats.BFramesDropped != 0 {
		t.Fatalf("err %v, asked %d times, stats %+v", res.err, asked, res.stats)
	}
	seen := map[int64]bool{}
	backwards := 0
	for i, au := range res.aus {
		if seen[au.PTS] {
			t.Errorf("PTS %d twice", au.PTS)
		}
		seen[au.PTS] = true
		if i > 0 && au.PTS < res.aus[i-1].PTS {
			backwards++
		}
	}
	if backwards == 0 || len(res.aus) < 10 {
		t.Errorf("%d pictures, %d presented before their predecessor: the clip should reorder", len(res.aus), backwards)
	}
	if w := res.logs.level(slog.LevelWarn); len(w) != 0 {
		t.Errorf("warnings %q", w)
	}
}
