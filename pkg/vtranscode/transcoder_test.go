package vtranscode

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h265"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"
	"go.uber.org/goleak"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// The Transcoder's goroutine must end with Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clip encodes testsrc2 with ffmpeg into MPEG-TS and returns its video
// access units in decode order.
func clip(t testing.TB, seconds int, size string, videoArgs ...string) []*av.AccessUnit {
	t.Helper()
	return clipRate(t, seconds, size, 30, videoArgs...)
}

// clipRate is clip at rate pictures a second.
func clipRate(t testing.TB, seconds int, size string, rate int, videoArgs ...string) []*av.AccessUnit {
	t.Helper()
	bin, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Fatalf("ffmpeg not found (%v): install it with apt-get install -y ffmpeg (make test does)", err)
	}
	out := filepath.Join(t.TempDir(), "clip.ts")
	args := []string{"-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=" + size + ":rate=" + strconv.Itoa(rate),
		"-t", strconv.Itoa(seconds)}
	args = append(append(args, videoArgs...), "-f", "mpegts", out)
	if msg, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	r := &mpegts.Reader{R: bytes.NewReader(b)}
	if err := r.Initialize(); err != nil {
		t.Fatal(err)
	}
	var aus []*av.AccessUnit
	for _, tr := range r.Tracks() {
		switch tr.Codec.(type) {
		case *mpegts.CodecH264:
			r.OnDataH264(tr, func(pts, _ int64, au [][]byte) error {
				aus = append(aus, &av.AccessUnit{PTS: pts, NALUs: au, IDR: h264.IsRandomAccess(au), Arrival: time.Now()})
				return nil
			})
		case *mpegts.CodecH265:
			r.OnDataH265(tr, func(pts, _ int64, au [][]byte) error {
				aus = append(aus, &av.AccessUnit{PTS: pts, NALUs: au, IDR: h265.IsRandomAccess(au), Arrival: time.Now()})
				return nil
			})
		}
	}
	for {
		if err := r.Read(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if len(aus) == 0 {
		t.Fatal("ffmpeg's clip has no video")
	}
	return aus
}

// sink collects a Transcoder's output.
type sink struct {
	mu  sync.Mutex
	aus []*av.AccessUnit
}

func (s *sink) emit(au *av.AccessUnit) {
	s.mu.Lock()
	s.aus = append(s.aus, au)
	s.mu.Unlock()
}

func (s *sink) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.aus)
}

// waitFor polls until the sink holds n units or the deadline passes (the
// machine is shared; the deadline is generous and bounds the loop).
func (s *sink) waitFor(t testing.TB, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for s.len() < n {
		select {
		case <-ctx.Done():
			t.Fatalf("%d access units out, want %d", s.len(), n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// feed writes every unit and waits until the encoder had all pictures the
// decoder released; a decoder holds back at most its reorder depth.
func transcode(t *testing.T, cfg Config, in []*av.AccessUnit, wantOut int) ([]*av.AccessUnit, Stats) {
	t.Helper()
	var s sink
	cfg.QueueSize = len(in) + 1
	tc, err := New(cfg, s.emit)
	if err != nil {
		t.Fatal(err)
	}
	go tc.Run()
	for _, au := range in {
		tc.Write(au)
	}
	s.waitFor(t, wantOut)
	tc.Close()
	return s.aus, tc.Stats()
}

// probe has ffprobe describe an Annex B H.264 stream, one line per
// picture: key_frame,width,height,pix_fmt,pict_type (ffprobe's order);
// and the profile.
func probe(t *testing.T, aus []*av.AccessUnit) (frames [][]string, profile string) {
	t.Helper()
	var buf bytes.Buffer
	for _, au := range aus {
		for _, n := range au.NALUs {
			buf.Write([]byte{0, 0, 0, 1})
			buf.Write(n)
		}
	}
	file := filepath.Join(t.TempDir(), "out.h264")
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ffprobe", "-v", "error", "-f", "h264", "-show_entries",
		"frame=key_frame,pict_type,width,height,pix_fmt:stream=profile", "-of", "csv=p=0", file).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, ",")
		if len(f) == 1 {
			profile = f[0]
			continue
		}
		frames = append(frames, f)
	}
	return frames, profile
}

// Every input a browser cannot play comes out as Constrained Baseline
// 4:2:0 without B-frames, an IDR every 2 s, the source's size and PTS,
// and every picture decodes.
func TestTranscode(t *testing.T) {
	const seconds = 5
	for _, tc := range []struct {
		name  string
		codec Codec
		args  []string
	}{
		{"H.264 with B-frames", CodecH264, []string{"-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "250", "-b:v", "800k"}},
		{"H.264 High 4:4:4 10-bit", CodecH264, []string{"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv444p10le", "-bf", "0", "-g", "60"}},
		{"H.265", CodecH265, []string{"-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "log-level=none:bframes=2", "-g", "60"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := clip(t, seconds, "640x360", tc.args...)
			// The decoder keeps back at most a few pictures for
			// reordering; Close drops them, as it does at a path's end.
			want := len(in) - 4
			out, st := transcode(t, Config{Codec: tc.codec, FPS: 30, Bitrate: 800_000}, in, want)
			frames, profile := probe(t, out)
			t.Logf("%d in, %d out, CPU %v (%.1f ms a picture; -race)", len(in), len(out), st.CPU,
				float64(st.CPU.Microseconds())/1000/float64(len(out)))
			if profile != "Constrained Baseline" {
				t.Errorf("profile %q, want Constrained Baseline", profile)
			}
			if len(frames) != len(out) {
				t.Errorf("ffprobe decoded %d pictures of %d", len(frames), len(out))
			}
			for i, f := range frames {
				key := i%60 == 0
				if len(f) < 5 || f[4] == "B" || (f[0] == "1") != key || f[1] != "640" || f[2] != "360" || f[3] != "yuv420p" {
					t.Errorf("picture %d: %v (want key=%v, no B, 640x360 yuv420p)", i, f, key)
				}
			}
			for i, au := range out {
				if au.IDR != (i%60 == 0) {
					t.Errorf("unit %d: IDR %v", i, au.IDR)
				}
				if i > 0 && au.PTS != out[i-1].PTS+3000 {
					t.Errorf("unit %d: PTS %d after %d, want +3000", i, au.PTS, out[i-1].PTS)
				}
				if au.IDR && h264.NALUType(au.NALUs[0][0]&0x1f) != h264.NALUTypeSPS {
					t.Errorf("IDR %d does not start with an SPS", i)
				}
			}
			if out[0].PTS != minPTS(in) {
				t.Errorf("first PTS %d, want the source's first %d", out[0].PTS, minPTS(in))
			}
			if st.FramesIn != uint64(len(in)) || st.FramesOut != uint64(len(out)) || st.Dropped != 0 || st.Errors != 0 || st.CPU <= 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func minPTS(aus []*av.AccessUnit) int64 {
	m := aus[0].PTS
	for _, au := range aus {
		m = min(m, au.PTS)
	}
	return m
}

// A switch from passthrough: the cached GOP is fed so the decoder has its
// references, but nothing presented up to the cut-over comes out, and the
// first picture after it is an IDR.
func TestTranscodeAfter(t *testing.T) {
	in := clip(t, 3, "320x240", "-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "250")
	cut := in[0].PTS + 30*3000
	out, _ := transcode(t, Config{After: cut, HasAfter: true}, in, len(in)-30-4)
	if !out[0].IDR || out[0].PTS != cut+3000 {
		t.Errorf("first out: IDR %v PTS %d, want an IDR at %d", out[0].IDR, out[0].PTS, cut+3000)
	}
}

// The input queue is bounded: a burst far past it is dropped up to the
// next IDR, counted, and the output resumes there, decodable.
func TestQueueBound(t *testing.T) {
	in := clip(t, 10, "640x360", "-c:v", "libx264", "-preset", "ultrafast", "-bf", "0", "-g", "30")
	var s sink
	tc, err := New(Config{QueueSize: 4}, s.emit)
	if err != nil {
		t.Fatal(err)
	}
	go tc.Run()
	for _, au := range in {
		tc.Write(au)
	}
	st := tc.Stats()
	if st.Dropped == 0 || st.FramesIn+st.Dropped != uint64(len(in)) {
		t.Fatalf("%d units into a queue of 4: stats %+v", len(in), st)
	}
	s.waitFor(t, int(st.FramesIn)-2)
	tc.Close()
	st = tc.Stats()
	t.Logf("%d written, %d queued, %d dropped, %d out", len(in), st.FramesIn, st.Dropped, st.FramesOut)
	if frames, _ := probe(t, s.aus); len(frames) != len(s.aus) || !s.aus[0].IDR {
		t.Errorf("ffprobe decoded %d of %d pictures", len(frames), len(s.aus))
	}
}

// SetBitrate follows the source's rate: from the change on (an IDR, the
// encoder restarts) the output is much larger.
func TestSetBitrate(t *testing.T) {
	in := clip(t, 4, "640x360", "-c:v", "libx264", "-preset", "ultrafast", "-bf", "0", "-g", "250", "-b:v", "3000k")
	var s sink
	tc, err := New(Config{Bitrate: 300_000, QueueSize: len(in)}, s.emit)
	if err != nil {
		t.Fatal(err)
	}
	go tc.Run()
	defer tc.Close()
	// Not on the 2 s keyframe interval, so no IDR falls on the change.
	half := len(in)/2 - 15
	for _, au := range in[:half] {
		tc.Write(au)
	}
	s.waitFor(t, half)
	tc.SetBitrate(3_000_000)
	for _, au := range in[half:] {
		tc.Write(au)
	}
	s.waitFor(t, len(in))
	size := func(aus []*av.AccessUnit) (n int) {
		for _, au := range aus {
			n += au.Size
		}
		return n
	}
	// Skip the first GOP's IDR and the rate control's settling.
	lo, hi := size(s.aus[10:half]), size(s.aus[half+10:])
	t.Logf("bytes at 300 kbit/s: %d, at 3 Mbit/s: %d", lo, hi)
	if hi < 3*lo || !s.aus[half].IDR {
		t.Errorf("bytes %d then %d (want ≥ 3×), IDR at the change %v", lo, hi, s.aus[half].IDR)
	}
}
