package vtranscode

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// obs1080p60 is what OBS's Advanced output mode sends with its default
// x264 options at 1080p60 (preset veryfast, B-frames 2, keyframe
// interval 2 s), as ffmpeg arguments; ultrafast with -bf 2 keeps the
// clip quick to make and the B-frames in.
var obs1080p60 = []string{"-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "120", "-pix_fmt", "yuv420p", "-b:v", "6000k"}

// A 1080p60 source with B-frames comes out 1280x720 at 30 fps, Constrained
// Baseline, every other picture kept with its own timestamp; checked by
// decoding the output with ffprobe.
func TestCaps1080p60(t *testing.T) {
	in := clipRate(t, 2, "1920x1080", 60, obs1080p60...)
	// The decoder keeps back a few pictures; half of the rest come out.
	out, st := transcode(t, Config{FPS: 60, Bitrate: 2_500_000, MaxHeight: 720, MaxFPS: 30}, in, (len(in)-4)/2-1)
	frames, profile := probe(t, out)
	t.Logf("%d in at 60 fps, %d out, %d skipped for the rate cap, CPU %v (-race)", len(in), len(out), st.Skipped, st.CPU)
	if profile != "Constrained Baseline" {
		t.Errorf("profile %q, want Constrained Baseline", profile)
	}
	if len(frames) != len(out) {
		t.Fatalf("ffprobe decoded %d pictures of %d", len(frames), len(out))
	}
	for i, f := range frames {
		if f[1] != "1280" || f[2] != "720" || f[4] == "B" {
			t.Errorf("picture %d: %v, want 1280x720 without B", i, f)
		}
	}
	for i := 1; i < len(out); i++ {
		if d := out[i].PTS - out[i-1].PTS; d != 3000 {
			t.Errorf("unit %d: PTS step %d, want 3000 (30 fps, every other source picture)", i, d)
		}
	}
	if out[0].PTS != minPTS(in) || !out[0].IDR {
		t.Errorf("first out: PTS %d IDR %v, want the source's first PTS %d as an IDR", out[0].PTS, out[0].IDR, minPTS(in))
	}
	// 2 s at 30 fps: an IDR every 60 output pictures.
	for i, au := range out {
		if au.IDR != (i%60 == 0) {
			t.Errorf("unit %d: IDR %v", i, au.IDR)
		}
	}
	if st.OutWidth != 1280 || st.OutHeight != 720 || st.Skipped < uint64(len(out))-2 {
		t.Errorf("stats %+v", st)
	}
}

// Rate caps keep pictures evenly by their timestamps.
func TestKeepForRate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		step     float64 // source's PTS step
		max      float64
		n, wantN int // pictures in, kept
	}{
		{"60 to 30", 1500, 30, 600, 300},
		{"59.94 to 30", 1501.5, 30, 600, 300},
		{"50 to 30", 1800, 30, 500, 300},
		{"30 to 30", 3000, 30, 300, 300},
		{"29.97 to 30", 3003, 30, 300, 300},
		{"25 to 30", 3600, 30, 250, 250},
		{"120 to 30", 750, 30, 1200, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &Transcoder{cfg: Config{MaxFPS: tc.max}}
			kept, last, maxGap := 0, int64(-1), int64(0)
			for i := range tc.n {
				pts := int64(1234 + float64(i)*tc.step)
				if tr.keepForRate(pts) {
					kept++
					if last >= 0 {
						maxGap = max(maxGap, pts-last)
					}
					last = pts
				}
			}
			// Within one picture of the target, and no gap longer than
			// two output intervals (even, not in bursts).
			if kept < tc.wantN-1 || kept > tc.wantN+1 || float64(maxGap) > 2*90000/tc.max {
				t.Errorf("kept %d of %d (want %d), longest gap %d ticks", kept, tc.n, tc.wantN, maxGap)
			}
		})
	}
	// A jump in the clock (a new publisher) starts counting again.
	tr := &Transcoder{cfg: Config{MaxFPS: 30}}
	for _, pts := range []int64{0, 1500, 3000} {
		tr.keepForRate(pts)
	}
	if !tr.keepForRate(90000 * 3600) {
		t.Error("the first picture after a clock jump was dropped")
	}
}

func TestOutputSize(t *testing.T) {
	for _, tc := range []struct{ w, h, max, ow, oh int }{
		{1920, 1080, 720, 1280, 720},
		{1280, 720, 720, 1280, 720},
		{640, 360, 720, 640, 360},
		{1440, 1080, 720, 960, 720},
		{3840, 2160, 720, 1280, 720},
		{1080, 1920, 720, 404, 720}, // portrait: 405 rounds down to even
		{1921, 1081, 0, 1920, 1080}, // no cap: even only
		{7680, 4320, 360, 640, 360},
	} {
		if ow, oh := OutputSize(tc.w, tc.h, tc.max); ow != tc.ow || oh != tc.oh {
			t.Errorf("OutputSize(%d, %d, %d) = %dx%d, want %dx%d", tc.w, tc.h, tc.max, ow, oh, tc.ow, tc.oh)
		}
	}
}

// rssBytes is this process's resident set (VmRSS).
func rssBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// An 8K stream is refused by the area check on its SPS size, and the
// decoder itself refuses its pictures before allocating them: nothing
// comes out, every unit is an error, and the process grows by less than
// 100 MB (an 8K picture is 50 MB, its reference pictures several).
func TestDecodeAreaRefused(t *testing.T) {
	in := clipRate(t, 1, "7680x4320", 5, "-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "5", "-pix_fmt", "yuv420p")
	const limit = 3840 * 2160
	why := TooLarge(7680, 4320, limit)
	if !strings.Contains(why, "7680x4320") || !strings.Contains(why, "transcode.maxDecodeArea") {
		t.Errorf("TooLarge says %q", why)
	}
	if TooLarge(3840, 2160, limit) != "" || TooLarge(7680, 4320, 0) != "" {
		t.Error("4K UHD, or no limit, refused")
	}
	before := rssBytes(t)
	var s sink
	tc, err := New(Config{FPS: 5, MaxDecodeArea: limit, QueueSize: len(in) + 1, QueueBytes: 1 << 30}, s.emit)
	if err != nil {
		t.Fatal(err)
	}
	go tc.Run()
	for _, au := range in {
		tc.Write(au)
	}
	waitStat(t, tc, func(st Stats) bool { return st.Errors >= uint64(len(in)) })
	grew := rssBytes(t) - before
	tc.Close()
	st := tc.Stats()
	t.Logf("%d 8K units: %d errors, %d out; RSS grew %.1f MB", len(in), st.Errors, st.FramesOut, float64(grew)/1e6)
	if st.FramesOut != 0 || s.len() != 0 {
		t.Errorf("%d pictures came out of an 8K stream past the area limit", st.FramesOut)
	}
	if grew > 100<<20 {
		t.Errorf("RSS grew %d MB decoding refused 8K pictures, want < 100", grew>>20)
	}
}

// The input queue is bounded in bytes as well as units: large units past
// QueueBytes are dropped up to the next IDR although the unit count has
// room.
func TestQueueBytes(t *testing.T) {
	var s sink
	tc, err := New(Config{QueueSize: 1000, QueueBytes: 1 << 20}, s.emit)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close() // never run: the queue only fills
	big := make([]byte, 300<<10)
	for i := range 10 {
		tc.Write(&av.AccessUnit{PTS: int64(i) * 3000, IDR: i == 0 || i == 8, NALUs: [][]byte{big}})
	}
	st := tc.Stats()
	// 3 fit in 1 MiB; 4..8 dropped (waiting for the IDR at 8, which does
	// not fit either), 9 dropped waiting.
	if st.FramesIn != 3 || st.Dropped != 7 {
		t.Errorf("ten 300 KiB units into 1 MiB: %d queued, %d dropped; want 3 and 7", st.FramesIn, st.Dropped)
	}
}

// waitStat polls until cond holds for the transcoder's stats or the
// deadline passes.
func waitStat(t *testing.T, tc *Transcoder, cond func(Stats) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for !cond(tc.Stats()) {
		select {
		case <-ctx.Done():
			t.Fatalf("stats %+v", tc.Stats())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
