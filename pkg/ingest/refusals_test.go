package ingest

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"

	"github.com/srtwhep/srtwhep/internal/testkit/tsfixture"
)

// TestRefusalIsRemembered: a publisher refused for its stream leaves, per
// path, the reason and the fix for every encoder the issue names, for
// the viewers' POST and /v1/paths, and counts it; the next publisher
// whose stream plays clears it.
func TestRefusalIsRemembered(t *testing.T) {
	r := newRig(t, Config{Video: func(string) VideoSettings { return VideoSettings{Mode: VideoPassthrough} }})
	for range 2 {
		_ = wait(t, r.serve(t, newMemConn("live/bad", 3, clip(t, "h264_bframes.ts"))))
	}
	p, ok := r.m.Problem("live/bad")
	if !ok || p.Live || p.Reason != ReasonBFrames || p.Count != 2 || p.Remote != "192.0.2.7:4000" {
		t.Fatalf("Problem = %+v, %v; want a refusal for bframes, counted twice", p, ok)
	}
	for _, fix := range []string{"ffmpeg -bf 0", "OBS Simple output mode", "OBS Advanced output mode", "GStreamer: x264enc bframes=0", "video: auto"} {
		if !strings.Contains(p.Text, fix) {
			t.Errorf("text %q does not name %q", p.Text, fix)
		}
	}
	if n := r.m.Refusals()[ReasonBFrames]; n != 2 {
		t.Errorf("Refusals()[bframes] = %d, want 2", n)
	}
	var shown bool
	for _, ap := range r.m.APIPaths() {
		if ap.Name == "live/bad" {
			shown = ap.Refused != nil && ap.Refused.Reason == ReasonBFrames && ap.Refused.Detail == p.Text && ap.Warning == nil
		}
	}
	if !shown {
		t.Errorf("/v1/paths does not show the refusal: %+v", r.m.APIPaths())
	}

	// A publisher that cannot even start (no H.264 or H.265 video: an
	// Opus-only program) is listed too.
	_ = wait(t, r.serve(t, newMemConn("live/novideo", 4, tsfixture.OpusOnly(t))))
	if p, ok := r.m.Problem("live/novideo"); !ok || p.Reason != ReasonNoH264 {
		t.Errorf("Problem(live/novideo) = %+v, %v; want no-h264", p, ok)
	}
	if ps, ok := pathStats(r.m, "live/novideo"); !ok || ps.Problem == nil || ps.Publisher != nil {
		t.Errorf("stats of live/novideo = %+v, %v; want the refusal and no publisher", ps, ok)
	}

	good := newMemConn("live/bad", 5, clip(t, "h264.ts"))
	good.holdEOF = make(chan struct{})
	done := r.serve(t, good)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := r.m.Problem("live/bad"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a publisher whose stream plays did not clear the refusal within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(good.holdEOF)
	_ = wait(t, done)
}

// TestNoPictureWarning: video without a single IDR (what GStreamer's
// srtsink delivers from mpegtsmux without alignment=7) gives one warning
// with the fix, a live problem for the viewers' POST, /v1/paths and the
// metric, while the publisher streams; it goes with the publisher.
func TestNoPictureWarning(t *testing.T) {
	var buf bytes.Buffer
	tr := &mpegts.Track{Codec: &mpegts.CodecH264{}}
	w := mpegts.Writer{W: &buf, Tracks: []*mpegts.Track{tr}}
	if err := w.Initialize(); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		pts := int64(i) * 3000
		if err := w.WriteH264(tr, pts, pts, [][]byte{{0x41, 0x9a, 0x02, 0x10, byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	r := newRig(t, Config{})
	r.m.pictureWait = 50 * time.Millisecond
	c := newMemConn("live/black", 3, buf.Bytes())
	c.holdEOF = make(chan struct{})
	done := r.serve(t, c)
	line := r.logs.WaitLog(t, 10*time.Second, "no decodable picture", "reason=no-idr")
	for _, fix := range []string{"mpegtsmux alignment=7", "h264parse config-interval=-1", "-bsf:v dump_extra"} {
		if !strings.Contains(line, fix) {
			t.Errorf("warning %q does not name %q", line, fix)
		}
	}
	p, ok := r.m.Problem("live/black")
	if !ok || !p.Live || p.Reason != ReasonNoPicture {
		t.Errorf("Problem = %+v, %v; want a live no-idr problem", p, ok)
	}
	var sampled, shown bool
	for _, s := range r.m.PathSamples() {
		sampled = sampled || s.Path == "live/black" && s.NoPicture == ReasonNoPicture
	}
	for _, ap := range r.m.APIPaths() {
		// Listed for its warning, with the publisher's address in it; the
		// connection itself is no publisher of the path until it claims
		// it with a picture.
		shown = shown || ap.Name == "live/black" && ap.Warning != nil && ap.Warning.Reason == ReasonNoPicture &&
			ap.Warning.Remote == c.remote && ap.Publisher == nil
	}
	if !sampled || !shown {
		t.Errorf("metric sample %v, /v1/paths warning %v; want both", sampled, shown)
	}
	close(c.holdEOF)
	_ = wait(t, done)
	if n := len(r.logs.Lines("no decodable picture")); n != 1 {
		t.Errorf("%d warnings, want 1", n)
	}
	if p, ok := r.m.Problem("live/black"); ok {
		t.Errorf("the warning outlived its publisher: %+v", p)
	}
}

// TestProblemsBounded: probing path names cannot grow the record past
// maxProblems, and a refusal expires after problemFor while a live
// problem lasts as long as its publisher.
func TestProblemsBounded(t *testing.T) {
	var b problems
	b.init()
	t0 := time.Unix(1e9, 0)
	for i := range maxProblems + 50 {
		b.note("live/p"+strconv.Itoa(i), "192.0.2.1:1", ReasonNoH264, false, t0.Add(time.Duration(i)*time.Millisecond), "x")
	}
	if n := len(b.snapshot(t0.Add(time.Second))); n != maxProblems {
		t.Errorf("%d records, want the bound %d", n, maxProblems)
	}
	if _, ok := b.get("live/p0", t0.Add(time.Second)); ok {
		t.Error("the oldest record survived past the bound")
	}
	b.note("live/live", "192.0.2.1:1", ReasonNoPicture, true, t0.Add(2*time.Second), "x")
	later := t0.Add(problemFor + 2*time.Second)
	if _, ok := b.get("live/p60", later); ok {
		t.Error("a refusal outlived problemFor")
	}
	if _, ok := b.get("live/live", later); !ok {
		t.Error("a live problem expired while its publisher streams")
	}
	if n := b.totals()[ReasonNoH264]; n != maxProblems+50 {
		t.Errorf("count %d, want %d", n, maxProblems+50)
	}
}

// TestRefusalLoopIsOneLine: an encoder refused over and over from one
// address (srtsink reconnects every 200 ms) is logged in full once; the
// lines of its repeats are held back and dropped, and the count goes to
// the record. Another reason, or another address, is logged in full.
func TestRefusalLoopIsOneLine(t *testing.T) {
	r := newRig(t, Config{Video: func(string) VideoSettings { return VideoSettings{Mode: VideoPassthrough} }})
	bframes := clip(t, "h264_bframes.ts")
	for i := range 20 {
		c := newMemConn("live/loop", 10+i, bframes)
		c.remote = "192.0.2.7:" + strconv.Itoa(4000+i) // a new source port each time, as a reconnecting encoder's
		_ = wait(t, r.serve(t, c))
	}
	if n := len(r.logs.Lines("B-frames detected", "path=live/loop")); n != 1 {
		t.Errorf("%d B-frame warnings for 20 refusals from one address, want 1:\n%s", n, r.logs.String())
	}
	if n := len(r.logs.Lines("path=live/loop")); n > 6 {
		t.Errorf("%d lines for 20 refusals from one address, want the first refusal's alone:\n%s", n, r.logs.String())
	}
	if p, _ := r.m.Problem("live/loop"); p.Count != 20 {
		t.Errorf("count %d, want 20", p.Count)
	}
	other := newMemConn("live/loop", 40, bframes)
	other.remote = "198.51.100.9:5000"
	_ = wait(t, r.serve(t, other))
	if n := len(r.logs.Lines("B-frames detected", "path=live/loop")); n != 2 {
		t.Errorf("%d B-frame warnings after a refusal from another address, want 2", n)
	}
	// The same address with a stream that plays: its lines are written.
	good := newMemConn("live/loop", 41, clip(t, "h264.ts"))
	good.remote = "198.51.100.9:5001"
	_ = wait(t, r.serve(t, good))
	if n := len(r.logs.Lines("stream parameters", "remote=198.51.100.9:5001")); n != 1 {
		t.Errorf("the good publisher's lines were not written (%d):\n%s", n, r.logs.String())
	}
}

// TestRefusalSummary: past refusalSummaryEvery, the repeats are one line
// with their count.
func TestRefusalSummary(t *testing.T) {
	var b problems
	b.init()
	t0 := time.Unix(1e9, 0)
	var lines []int
	for i := range 30 {
		again, summary := b.note("live/x", "192.0.2.7:"+strconv.Itoa(4000+i), ReasonBFrames, false, t0.Add(time.Duration(i)*time.Second), "x")
		if again != (i > 0) {
			t.Fatalf("refusal %d: again %v", i, again)
		}
		if summary > 0 {
			lines = append(lines, summary)
		}
	}
	if len(lines) != 2 || lines[0] != 10 || lines[1] != 10 {
		t.Errorf("summaries %v, want two of 10 (30 refusals a second apart, one line per 10 s)", lines)
	}
}

// TestRefusedPublisherKeepsGrace: viewers waiting out the grace period of
// a path that passes video through are not handed a publisher before its
// stream proved playable: three publishers refused for B-frames send them
// nothing (no new stream to jump to), and the good publisher that comes
// next is played from its IDR.
func TestRefusedPublisherKeepsGrace(t *testing.T) {
	r := newRig(t, Config{
		Video:    func(string) VideoSettings { return VideoSettings{Mode: VideoPassthrough} },
		Handover: func(string) Handover { return Handover{Takeover: TakeoverEntitled, Grace: time.Minute} },
	})
	rd := attachOnConnect(t, r, "live/g")
	good := clip(t, "h264.ts")
	if err := wait(t, r.serve(t, newMemConn("live/g", 1, good))); err != nil {
		t.Fatal(err)
	}
	before := drain(rd.Load())
	if len(before) == 0 {
		t.Fatal("the viewer got nothing from the first publisher")
	}
	for i := range 3 {
		_ = wait(t, r.serve(t, newMemConn("live/g", 10+i, clip(t, "h264_bframes.ts"))))
	}
	if got := drain(rd.Load()); len(got) != 0 {
		t.Errorf("the viewer in grace got %d frames from refused publishers, want none", len(got))
	}
	if st := r.hub.State("live/g"); st.Publisher || st.Readers != 1 {
		t.Errorf("hub state %+v, want the viewer still waiting", st)
	}
	if err := wait(t, r.serve(t, newMemConn("live/g", 20, good))); err != nil {
		t.Fatal(err)
	}
	after := drain(rd.Load())
	var videos int
	for _, f := range after {
		if f.Video != nil {
			if videos == 0 && (!f.Video.IDR || f.Gen == before[0].Gen) {
				t.Errorf("the next publisher starts with %+v, want its IDR in a new generation", f)
			}
			videos++
		}
	}
	if videos != 50 {
		t.Errorf("the viewer got %d pictures of the good publisher, want its 50", videos)
	}
}

// TestTakenOverEndKeepsNewWarning: a publisher that took the path over
// and warned about its own stream (a profile browsers cannot decode,
// noted at its first SPS) keeps that warning when the publisher it
// replaced ends afterwards; that one's end takes only its own with it.
func TestTakenOverEndKeepsNewWarning(t *testing.T) {
	m := New(Config{})
	old := newMemConn("live/take", 1, nil)
	old.remote = "192.0.2.7:4000"
	m.problems.note("live/take", "192.0.2.7:4001", ReasonProfile, true, time.Now(), problemText(ReasonProfile))
	m.noteEnd(old, nil, nil)
	if p, ok := m.Problem("live/take"); !ok || p.Reason != ReasonProfile {
		t.Fatalf("after the replaced publisher ended: %+v, %v; want the new one's %s warning", p, ok, ReasonProfile)
	}
	cur := newMemConn("live/take", 2, nil)
	cur.remote = "192.0.2.7:4001"
	m.noteEnd(cur, nil, nil)
	if p, ok := m.Problem("live/take"); ok {
		t.Errorf("the warning outlived its own publisher: %+v", p)
	}
}
