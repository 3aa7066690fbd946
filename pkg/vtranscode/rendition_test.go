package vtranscode

import (
	"slices"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// renditionArgs is a 720p30 source as OBS and the README send it: x264,
// 2.5 Mbit/s, no B-frames, an IDR every 2 s.
var renditionArgs = []string{"-c:v", "libx264", "-preset", "veryfast", "-b:v", "2500k", "-pix_fmt", "yuv420p", "-bf", "0", "-g", "60"}

// renditionConfig is a 360p rung of it (pkg/ingest's automatic ladder).
func renditionConfig(n int) Config {
	return Config{FPS: 30, Bitrate: 700_000, MaxHeight: 360, FollowIDR: true, KeyframeInterval: 8 * time.Second,
		QueueSize: n + 1, QueueBytes: 1 << 30}
}

// startRendition runs a 360p rendition's transcoder of a 5 s 720p clip,
// which it returns with the sink the transcoder writes to.
func startRendition(t *testing.T) ([]*av.AccessUnit, *sink, *Transcoder) {
	t.Helper()
	in := clip(t, 5, "1280x720", renditionArgs...)
	s := &sink{}
	tc, err := New(renditionConfig(len(in)), s.emit)
	if err != nil {
		t.Fatal(err)
	}
	go tc.Run()
	return in, s, tc
}

// TestFollowIDR: a rendition's IDRs are exactly the source's (the
// backstop interval is longer than its GOP), plus one where a viewer
// asked for it.
func TestFollowIDR(t *testing.T) {
	in, s, tc := startRendition(t)
	var want []int64
	for i, au := range in {
		if au.IDR {
			want = append(want, au.PTS)
		}
		if i == 100 {
			// A viewer moving onto the rendition holds its picture at the
			// PTS of picture 100 and asks for an IDR after it.
			tc.RequestIDR(au.PTS)
			want = append(want, in[101].PTS)
		}
		tc.Write(au)
	}
	s.waitFor(t, len(in))
	tc.Close()
	var got []int64
	for _, au := range s.aus {
		if au.IDR {
			got = append(got, au.PTS)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("IDRs at %v, want the source's and the one asked for: %v", got, want)
	}
	if st := tc.Stats(); st.OutWidth != 640 || st.OutHeight != 360 {
		t.Fatalf("output %dx%d, want 640x360", st.OutWidth, st.OutHeight)
	}
}

// TestRequestedIDRsBounded: a player that pins and unpins in a loop asks
// for an IDR before every picture; every viewer of the rendition shares
// its IDRs, so at most one a second is made for requests (each still
// answered, a little later), beside the source's.
func TestRequestedIDRsBounded(t *testing.T) {
	in, s, tc := startRendition(t)
	source := map[int64]bool{}
	for i, au := range in {
		if au.IDR {
			source[au.PTS] = true
		}
		if i > 0 {
			tc.RequestIDR(in[i-1].PTS)
		}
		tc.Write(au)
		s.waitFor(t, i+1) // in real time: each request before the next picture is coded
	}
	tc.Close()
	var asked []int64
	for _, au := range s.aus {
		if au.IDR && !source[au.PTS] {
			asked = append(asked, au.PTS)
		}
	}
	for i := 1; i < len(asked); i++ {
		if d := asked[i] - asked[i-1]; d < 90000 {
			t.Fatalf("requested IDRs %d ticks apart (at %v), want at least a second (90000)", d, asked)
		}
	}
	// 5 s of requests: about one a second, fewer where the source's own
	// IDR answered them.
	if len(asked) < 2 {
		t.Fatalf("%d requested IDRs in 5 s of requests (at %v): requests must still be answered", len(asked), asked)
	}
	t.Logf("%d pictures, %d source IDRs, %d requested IDRs made for %d requests", len(in), len(source), len(asked), len(in)-1)
}

// BenchmarkRendition360p is issue 28's cost: one 360p rendition (700
// kbit/s) of a 720p30 2.5 Mbit/s source, 10 s of it, as the share of one
// core its thread takes (decode, swscale, libx264; goal ≤ 10 %),
// whatever the number of viewers on it.
func BenchmarkRendition360p(b *testing.B) {
	const seconds = 10
	in := clip(b, seconds, "1280x720", renditionArgs...)
	var cpu time.Duration
	for b.Loop() {
		var s sink
		tc, err := New(renditionConfig(len(in)), s.emit)
		if err != nil {
			b.Fatal(err)
		}
		go tc.Run()
		for _, au := range in {
			tc.Write(au)
		}
		s.waitFor(b, len(in))
		tc.Close()
		cpu += tc.Stats().CPU
	}
	b.ReportMetric(100*cpu.Seconds()/float64(b.N)/seconds, "%core")
	b.ReportMetric(100*PlanJob(renditionConfig(0), 1280, 720).Estimate(), "%core-estimated")
}
