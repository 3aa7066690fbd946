package ingest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/cpubudget"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// BenchmarkRenditionInServer is the 360p rung of a live 720p30 2.5
// Mbit/s source (OBS's and the README's) as the server measures it and
// /v1/paths shows it (cpuPercent: the transcoder thread's CPU over its
// last 4 s), with one viewer on it: goal ≤ 10 % of one core.
func BenchmarkRenditionInServer(b *testing.B) {
	out := filepath.Join(b.TempDir(), "720p.ts")
	testkit.FFmpeg(b, "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-t", "12",
		"-c:v", "libx264", "-preset", "veryfast", "-bf", "0", "-g", "60", "-b:v", "2500k", "-maxrate", "2500k", "-bufsize", "2500k",
		"-pix_fmt", "yuv420p", "-f", "mpegts", out)
	data, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	var load float64
	for b.Loop() {
		r := newRig(b, Config{})
		c := newMemConn("live/hd", 11, data)
		c.pauseAt = videoPES(data)[65] // the ladder is planned at the second IDR (60)
		c.bitrate = 2_800_000          // the stream's rate in TS
		done := r.serve(b, c)
		<-c.paused
		rd, err := r.hub.AddLadderReader("live/hd", "360p", "viewer")
		if err != nil {
			b.Fatal(err)
		}
		rd.Attach()
		close(c.resume)
		// Read the way a viewer does, so its queue never fills.
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					drain(rd)
				}
			}
		}()
		testkit.WaitFor(b, 20*time.Second, "a measured load", func() bool {
			ps, _ := pathStats(r.m, "live/hd")
			if len(ps.Renditions) == 1 && ps.Renditions[0].Load > 0 {
				load = ps.Renditions[0].Load
				return true
			}
			return false
		})
		close(stop)
		rd.Close()
		c.CloseWith("done")
		_ = wait(b, done)
	}
	b.ReportMetric(100*load, "%core")
}

// ladderClip is 10 s of 640x480 at 30 fps, 1 Mbit/s, an IDR every
// second, as MPEG-TS: a source the automatic ladder gives one rung
// (320x240).
func ladderClip(t *testing.T) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "ladder.ts")
	testkit.FFmpeg(t, "-f", "lavfi", "-i", "testsrc2=size=640x480:rate=30", "-frames:v", "300",
		"-c:v", "libx264", "-preset", "ultrafast", "-bf", "0", "-g", "30", "-b:v", "1M", "-pix_fmt", "yuv420p",
		"-f", "mpegts", out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAutoLadder(t *testing.T) {
	for _, tc := range []struct {
		h, rate int
		want    []Rendition
	}{
		{720, 2_500_000, []Rendition{{360, 688_000}}},
		{1080, 6_000_000, []Rendition{{540, 1_650_000}, {360, 733_000}}},
		{2160, 20_000_000, []Rendition{{1080, 5_500_000}, {720, 2_444_000}}},
		{360, 700_000, nil}, // too small to halve
		{480, 300_000, []Rendition{{240, 200_000}}},
	} {
		got := AutoLadder(tc.h, tc.rate)
		if len(got) != len(tc.want) {
			t.Fatalf("AutoLadder(%d, %d) = %v, want %v", tc.h, tc.rate, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("AutoLadder(%d, %d) = %v, want %v", tc.h, tc.rate, got, tc.want)
			}
		}
	}
	// An explicit rung at or above the source is left out; off is none.
	info := av.StreamInfo{Codec: "H264", Width: 1280, Height: 720, FPS: 30}
	rungs := planLadder(LadderSettings{Steps: []Rendition{{720, 2_000_000}, {240, 300_000}, {480, 1_000_000}}}, info, 2_500_000)
	if len(rungs) != 3 || rungs[0].ID != hub.SourceRung || rungs[1].ID != "480p" || rungs[1].Width != 852 || rungs[2].ID != "240p" {
		t.Fatalf("planned %+v; want source, 480p (852 wide), 240p", rungs)
	}
	if rungs := planLadder(LadderSettings{Off: true}, info, 2_500_000); rungs != nil {
		t.Fatalf("off planned %+v", rungs)
	}
}

// TestRenditionOnDemand: an H.264 path that passes through gets its
// ladder once its first GOP's rate is known, with no transcoder running;
// the rung's first reader starts one (an IDR at once, then IDRs exactly
// where the source has them, at the rung's size); the linger after its
// last reader left stops it.
func TestRenditionOnDemand(t *testing.T) {
	r := newRig(t, Config{Video: func(string) VideoSettings {
		return VideoSettings{Mode: VideoAuto, Ladder: LadderSettings{Linger: 2 * time.Second}}
	}})
	data := ladderClip(t)
	starts := videoPES(data)
	c := newMemConn("live/ladder", 9, data)
	c.pauseAt = starts[75]
	c.then = newMemPause(starts[150])
	c.holdEOF = make(chan struct{})
	done := r.serve(t, c)
	<-c.paused

	rungs := r.hub.Ladder("live/ladder")
	if len(rungs) != 2 || rungs[0].Height != 480 || rungs[1].ID != "240p" || rungs[1].Width != 320 || rungs[1].Bitrate < 200_000 {
		t.Fatalf("ladder %+v; want the source and 240p", rungs)
	}
	rendition := func() RungStats {
		ps, _ := pathStats(r.m, "live/ladder")
		if len(ps.Renditions) != 1 {
			t.Fatalf("stats renditions %+v, want one", ps.Renditions)
		}
		return ps.Renditions[0]
	}
	if rs := rendition(); rs.Running || rs.Viewers != 0 {
		t.Fatalf("before any viewer: %+v; want no transcoder", rs)
	}
	rd, err := r.hub.AddLadderReader("live/ladder", "240p", "weak-viewer")
	if err != nil {
		t.Fatal(err)
	}
	rd.Attach()
	close(c.resume)
	<-c.then.paused

	var video []*av.AccessUnit
	testkit.WaitFor(t, 30*time.Second, "the rendition's pictures", func() bool {
		v, _, _ := split(t, drain(rd))
		video = append(video, v...)
		return len(video) >= 60 // of the 75 from the reader on, less the encoder's trail
	})
	if rs := rendition(); !rs.Running || rs.Viewers != 1 {
		t.Fatalf("with a viewer: %+v; want its transcoder running", rs)
	}
	if !video[0].IDR {
		t.Fatal("the rendition's first picture is no IDR")
	}
	var sps h264.SPS
	if err := sps.Unmarshal(video[0].NALUs[0]); err != nil || sps.Width() != 320 || sps.Height() != 240 {
		t.Fatalf("first NAL unit: SPS %dx%d (%v); want 320x240", sps.Width(), sps.Height(), err)
	}
	var idrs []int64
	for i, au := range video {
		if i > 0 && au.PTS <= video[i-1].PTS {
			t.Fatalf("picture %d: PTS %d after %d", i, au.PTS, video[i-1].PTS)
		}
		if au.IDR {
			idrs = append(idrs, au.PTS)
		}
	}
	// The source has an IDR every 30 pictures (90000 ticks): so has the
	// rendition after its first.
	if len(idrs) < 2 {
		t.Fatalf("IDRs at %v; want the source's too", idrs)
	}
	for i := 2; i < len(idrs); i++ {
		if idrs[i]-idrs[i-1] != av.ClockRate {
			t.Fatalf("IDRs at %v: not the source's, one a second", idrs)
		}
	}
	rd.Close()
	close(c.then.resume)
	testkit.WaitFor(t, 20*time.Second, "the rendition to stop", func() bool {
		return len(r.logs.Lines("rendition stopped: no viewers")) == 1
	})
	if rs := rendition(); rs.Running || rs.CPU <= 0 {
		t.Fatalf("after the linger: %+v; want stopped, with its CPU time counted", rs)
	}
	t.Logf("%s", strings.Join(r.logs.Lines("rendition"), "\n"))
	close(c.holdEOF)
	if err := wait(t, done); err != nil {
		t.Fatalf("Serve = %v", err)
	}
}

// TestRenditionOverBudget: a rung that does not fit the transcode CPU
// budget is not started; its reader gets nothing (its viewer stays on the
// source) and one line names the budget.
func TestRenditionOverBudget(t *testing.T) {
	budget := cpubudget.New(0.001)
	r := newRig(t, Config{Transcode: TranscodeLimits{Budget: budget}})
	data := ladderClip(t)
	c := newMemConn("live/ladder", 10, data)
	c.pauseAt = videoPES(data)[75]
	c.holdEOF = make(chan struct{})
	done := r.serve(t, c)
	<-c.paused
	rd, err := r.hub.AddLadderReader("live/ladder", "240p", "weak-viewer")
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	rd.Attach()
	close(c.resume)
	testkit.WaitFor(t, 20*time.Second, "the publisher to reach the end", func() bool {
		ps, _ := pathStats(r.m, "live/ladder")
		return ps.Totals.IngestFrames >= 290 // the last waits for the end of the stream
	})
	if v, _, _ := split(t, drain(rd)); len(v) != 0 {
		t.Fatalf("%d pictures from a rendition the budget refused", len(v))
	}
	lines := r.logs.Lines("rendition not started", "transcode.maxCPUPercent")
	if len(lines) != 1 {
		t.Fatalf("refusal lines %q; want one", lines)
	}
	// Tried again at each IDR (8 of them), not at every picture.
	if st := budget.Stats(); st.Refused < 2 || st.Refused > 9 {
		t.Fatalf("%d refusals; want one per IDR", st.Refused)
	}
	if !strings.Contains(lines[0], "refusals=1") {
		t.Errorf("refusal line %q", lines[0])
	}
	close(c.holdEOF)
	if err := wait(t, done); err != nil {
		t.Fatalf("Serve = %v", err)
	}
}
