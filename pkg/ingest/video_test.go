package ingest

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/events"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/tsdemux"
)

// TestVideoTranscoded: with video: auto, a stream browsers cannot play as
// published reaches the viewer through the path's transcoder: B-frames
// from the first IDR on, a long GOP from the picture that exceeds the
// bound, with the pictures passed through before it kept and the
// transcoded ones continuing after them. Either way the viewer gets
// Constrained Baseline with PTS that only go forward, an IDR (with its
// SPS) first and at the switch, and the log says once why, at what cost
// and how to avoid it.
func TestVideoTranscoded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		clip     string
		settings VideoSettings
		passed   int // pictures passed through before the switch
		reason   string
	}{
		{"B-frames", "h264_bframes.ts", VideoSettings{}, 2, "B-frames"},
		// x265's default B-frames: the whole path is transcoded (nobody
		// can play the original), not only its H.264 rendition.
		{"H.265 B-frames", "h265_aac.ts", VideoSettings{}, 2, "B-frames"},
		// h264.ts has IDRs at pictures 0 and 30 (25 fps): the 26th picture
		// (index 26) is 1.04 s into the GOP.
		{"long GOP", "h264.ts", VideoSettings{MaxKeyframeInterval: time.Second}, 26, "keyframe interval"},
		{"forced", "h264.ts", VideoSettings{Mode: VideoTranscode}, 0, "video: transcode"},
		{"High 4:4:4 10-bit", "", VideoSettings{}, 0, "profile is not playable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Config{Video: func(string) VideoSettings { return tc.settings }})
			var data []byte
			if tc.clip != "" {
				data = clip(t, tc.clip)
			} else {
				data = ffmpegClip(t, "-pix_fmt", "yuv444p10le", "-bf", "0", "-g", "25")
			}
			c := newMemConn("live/tc", 5, data)
			starts := videoPES(data)
			c.pauseAt = starts[len(starts)-1]
			var viewer *hub.Reader
			r.onEvent = func(e events.Event) {
				if e.Kind == events.PublisherConnected {
					viewer = r.reader(t, "live/tc", (*hub.Reader).AttachAV)
				}
			}
			done := r.serve(t, c)
			<-c.paused
			// All but the last picture are in; the transcoder's output
			// trails by its work and the decoder's reordering (up to 4), and
			// with B-frames the two presented before the last passed-through
			// picture are not shown again.
			want := len(starts) - 1 - 6
			var video []*av.AccessUnit
			testkit.WaitFor(t, 30*time.Second, "the transcoded pictures", func() bool {
				v, _, _ := split(t, drain(viewer))
				video = append(video, v...)
				return len(video) >= want
			})
			for _, ap := range r.m.APIPaths() {
				if ap.Name == "live/tc" && (ap.Transcode == nil || !strings.Contains(ap.Transcode.Reason, tc.reason) || ap.Transcode.FramesOut == 0) {
					t.Errorf("/v1/paths transcode: %+v", ap.Transcode)
				}
			}
			close(c.resume)
			if err := wait(t, done); err != nil {
				t.Fatalf("Serve = %v", err)
			}
			checkTranscoded(t, video, tc.passed)
			if lines := r.logs.Lines("video transcoded to H.264 for browsers", tc.reason); len(lines) != 1 {
				t.Errorf("want one transcoding line naming %q, got %q", tc.reason, lines)
			} else if !strings.Contains(lines[0], "fix=") || !strings.Contains(lines[0], "cost=") {
				t.Errorf("the transcoding line lacks the cost or the fix: %s", lines[0])
			}
			if w := r.logs.Lines("B-frames detected"); len(w) != 0 {
				t.Errorf("refusal warning while transcoding: %q", w)
			}
		})
	}
}

func checkTranscoded(t *testing.T, video []*av.AccessUnit, passed int) {
	t.Helper()
	for i, au := range video {
		if i > 0 && au.PTS <= video[i-1].PTS {
			t.Errorf("picture %d: PTS %d after %d", i, au.PTS, video[i-1].PTS)
		}
		if len(au.Payloads) == 0 {
			t.Errorf("picture %d has no RTP payloads", i)
		}
		if (i == 0 || i == passed) && !au.IDR {
			t.Errorf("picture %d (the start or the switch) is not an IDR", i)
		}
	}
	if len(video) <= passed {
		t.Fatalf("%d pictures, want more than the %d passed through", len(video), passed)
	}
	var sps h264.SPS
	if err := sps.Unmarshal(video[passed].NALUs[0]); err != nil || sps.ProfileIdc != 66 || !sps.ConstraintSet1Flag {
		t.Errorf("transcoded IDR's first NAL unit: SPS %+v, %v; want Constrained Baseline", sps, err)
	}
}

// TestVideoTranscoderIdles: the transcoder stops when nobody has read the
// path for Linger (of stream time), the GOP cache goes with it, and a
// viewer who comes later restarts it from the kept GOP: its first picture
// is an IDR of the newest source picture, not a stale cached one.
func TestVideoTranscoderIdles(t *testing.T) {
	r := newRig(t, Config{Video: func(string) VideoSettings {
		return VideoSettings{Mode: VideoTranscode, Linger: 500 * time.Millisecond}
	}})
	data := clip(t, "h264.ts") // 50 pictures at 25 fps, IDRs at 0 and 30
	c := newMemConn("live/idle", 6, data)
	starts := videoPES(data)
	c.pauseAt = starts[40] // pictures up to 38 are out, 39 waits for PES 40
	c.holdEOF = make(chan struct{})
	done := r.serve(t, c)
	<-c.paused
	r.logs.WaitLog(t, 10*time.Second, "video transcoder stopped: no viewers")
	const first = 39
	viewer := r.reader(t, "live/idle", (*hub.Reader).AttachAV)
	close(c.resume)
	var video []*av.AccessUnit
	testkit.WaitFor(t, 30*time.Second, "the resumed pictures", func() bool {
		v, _, _ := split(t, drain(viewer))
		video = append(video, v...)
		return len(video) >= 50-1-first-4 // the last waits for the end; the transcoder trails
	})
	close(c.holdEOF)
	if err := wait(t, done); err != nil {
		t.Fatalf("Serve = %v", err)
	}
	if want := ptsOf(t, data, first); video[0].PTS != want || !video[0].IDR {
		t.Errorf("first picture: PTS %d IDR %v, want an IDR at picture %d (PTS %d)", video[0].PTS, video[0].IDR, first, want)
	}
	checkTranscoded(t, video, 0)
	if n := len(r.logs.Lines("video transcoder resumed for a viewer")); n != 1 {
		t.Errorf("%d resume lines, want 1", n)
	}
	ps, _ := pathStats(r.m, "live/idle")
	if ps.Totals.VideoTranscodedFrames < uint64(len(video)) {
		t.Errorf("totals %+v for %d pictures seen", ps.Totals, len(video))
	}
}

// ptsOf is the PTS the demuxer gives picture i of a clip (in decode
// order, which is presentation order here).
func ptsOf(t *testing.T, data []byte, i int) int64 {
	t.Helper()
	var pts []int64
	d := tsdemux.New(bytes.NewReader(data), tsdemux.Config{})
	if err := d.Run(t.Context(), func(au *av.AccessUnit) error { pts = append(pts, au.PTS); return nil }); err != nil || len(pts) <= i {
		t.Fatalf("demuxing the clip: %v, %d pictures", err, len(pts))
	}
	return pts[i]
}

// The source GOP kept for a transcoder start is bounded in pictures and
// bytes: past either, nothing is kept until the next IDR (a start then
// waits for it), and an IDR starts a new GOP.
func TestVideoGOPBound(t *testing.T) {
	h := hub.New(hub.Config{})
	pub, err := h.Publish("live/gop", "192.0.2.7:4000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	au := func(pts int64, idr bool, size int) *av.AccessUnit {
		return &av.AccessUnit{PTS: pts, IDR: idr, Size: size, NALUs: [][]byte{{0x41, 0}}}
	}
	for _, tc := range []struct {
		name string
		n    int // pictures after the IDR
		size int
	}{
		{"pictures", maxGOPUnits + 10, 100},
		{"bytes", 3, maxGOPBytes / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v videoPipeline
			// A bound on the GOP far above the clip's: passthrough, only
			// the keeping is under test.
			v.init(pub, VideoSettings{MaxKeyframeInterval: time.Hour}, nil)
			v.write(au(0, true, tc.size))
			for i := 1; i <= tc.n; i++ {
				v.write(au(int64(i)*3000, false, tc.size))
			}
			if !v.gopFull || len(v.gop) != 0 || v.gopSize != 0 {
				t.Errorf("after %d pictures of %d bytes: full %v, %d kept (%d bytes)", tc.n+1, tc.size, v.gopFull, len(v.gop), v.gopSize)
			}
			v.write(au(int64(tc.n+1)*3000, true, 100))
			if v.gopFull || len(v.gop) != 1 {
				t.Errorf("after the next IDR: full %v, %d kept", v.gopFull, len(v.gop))
			}
			v.close()
		})
	}
}

// ffmpegClip encodes 1 s of 320x240 at 25 fps into MPEG-TS with x264 and
// the given options, for streams the committed clips do not cover.
func ffmpegClip(t *testing.T, x264 ...string) []byte {
	t.Helper()
	bin, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Fatalf("ffmpeg not found (%v): install it with apt-get install -y ffmpeg (make test does)", err)
	}
	args := append([]string{"-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25",
		"-t", "1", "-c:v", "libx264", "-preset", "ultrafast"}, x264...)
	out, err := exec.Command(bin, append(args, "-f", "mpegts", "-")...).Output()
	if err != nil {
		t.Fatalf("ffmpeg %v: %v", args, err)
	}
	return out
}
