package hub

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/av"
)

var testTrack = &av.AudioTrack{Codec: av.AudioCodecAAC, SampleRate: 48000, Channels: 2}

func mkSU(pts int) *av.AudioUnit {
	return &av.AudioUnit{PTS: int64(pts), Data: make([]byte, 10), Track: testTrack}
}

// drainKinds is drainFrames with source units as "S<pts>".
func drainKinds(t *testing.T, r *Reader) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out []string
	for {
		f, err := r.RecvFrame(ctx)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("RecvFrame: %v", err)
			}
			return out
		}
		var s string
		switch {
		case f.Video != nil && f.Audio == nil && f.Source == nil:
			s = fmt.Sprintf("V%d", f.Video.PTS)
		case f.Audio != nil && f.Video == nil && f.Source == nil:
			s = fmt.Sprintf("A%d", f.Audio.PTS)
		case f.Source != nil && f.Video == nil && f.Audio == nil:
			s = fmt.Sprintf("S%d", f.Source.PTS)
		default:
			t.Fatalf("frame %+v: want exactly one of video, audio, source", f)
		}
		if f.CatchUp {
			s += "*"
		}
		out = append(out, s)
	}
}

// Each reader gets the audio it attached for: an SRT reader the source
// units, a WHEP viewer the Opus frames, a video-only viewer neither; the
// cached GOP replays each kind from the IDR's PTS on.
func TestSourceAudioGoesToSourceReaders(t *testing.T) {
	h := New(Config{QueueSize: 16})
	pub := mustPublish(t, h, "live/a")
	pub.SetAudio(true)
	pub.SetSourceAudio(true)
	write := func(pts int, video, idr bool) {
		if video {
			pub.Write(mkAU(pts, idr))
			return
		}
		pub.WriteSourceAudio(mkSU(pts))
		pub.WriteAudio(mkAF(pts))
	}
	write(50, false, false) // plays before the IDR
	write(95, false, false) // muxed ahead of its IDR
	write(90, true, true)
	write(80, false, false) // muxed late, plays before the IDR
	write(100, false, false)
	write(91, true, false)

	src := mustReader(t, h, "live/a", "srt")
	if !src.SourceAudio() {
		t.Fatal("SourceAudio() = false on a path whose publisher announced it")
	}
	src.AttachSource()
	opus := mustReader(t, h, "live/a", "whep")
	opus.AttachAV()
	vo := mustReader(t, h, "live/a", "video")
	vo.Attach()
	write(110, false, false)
	write(92, true, false)
	wantFrames(t, "source reader", drainKinds(t, src), "V90* S95* S100* V91* S110 V92")
	wantFrames(t, "WHEP reader", drainKinds(t, opus), "V90* A95* A100* V91* A110 V92")
	wantFrames(t, "video-only reader", drainKinds(t, vo), "V90* V91* V92")

	// A unit without its track is refused, since a reader could not mux it.
	pub.WriteSourceAudio(&av.AudioUnit{PTS: 120})
	if got := drainKinds(t, src); len(got) != 0 {
		t.Fatalf("a unit without a track reached the reader: %v", got)
	}
}

// Source audio follows the Opus rules: it enters whenever there is room,
// also while video drops to the next IDR, and a full queue costs one unit,
// counted as an audio drop.
func TestSourceAudioNeverGatedByVideo(t *testing.T) {
	h := New(Config{QueueSize: 4})
	pub := mustPublish(t, h, "live/a")
	pub.SetSourceAudio(true)
	r := mustReader(t, h, "live/a", "srt")
	// 4 + 6 slots: the path announced source audio.
	r.AttachSource()
	pub.WriteSourceAudio(mkSU(0)) // before any IDR
	pub.Write(mkAU(0, true))
	for i := 1; i <= 4; i++ {
		pub.Write(mkAU(i, false))
		pub.WriteSourceAudio(mkSU(i))
	}
	pub.Write(mkAU(5, false))     // full for video: drops to the next IDR
	pub.WriteSourceAudio(mkSU(5)) // full: lost
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for range 3 {
		if _, err := r.RecvFrame(ctx); err != nil {
			t.Fatal(err)
		}
	}
	pub.Write(mkAU(6, false)) // still dropping
	pub.WriteSourceAudio(mkSU(6))
	pub.Write(mkAU(7, true))
	wantFrames(t, "rest", drainKinds(t, r), "S1 V2 S2 V3 S3 V4 S4 S6 V7")
	if st := pub.Stats(); st.VideoFramesDropped != 2 || st.AudioFramesDropped != 1 {
		t.Errorf("drops video %d audio %d, want 2, 1", st.VideoFramesDropped, st.AudioFramesDropped)
	}
}

// SourceAudio is read live: a new publisher starts without it until it
// announces its own.
func TestSourceAudioFollowsThePublisher(t *testing.T) {
	h := New(Config{QueueSize: 4})
	first, err := h.PublishWith("live/a", "a", PublishOptions{Override: true})
	if err != nil {
		t.Fatal(err)
	}
	first.SetSourceAudio(true)
	r := mustReader(t, h, "live/a", "srt")
	r.AttachSource()
	second, err := h.PublishWith("live/a", "b", PublishOptions{Override: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(second.Close)
	if r.SourceAudio() {
		t.Fatal("SourceAudio() still true after a publisher without audio took over")
	}
	first.SetSourceAudio(true) // the old publisher no longer speaks for the path
	if r.SourceAudio() {
		t.Fatal("the replaced publisher changed SourceAudio")
	}
	second.SetSourceAudio(true)
	if !r.SourceAudio() {
		t.Fatal("SourceAudio() = false after the new publisher announced it")
	}
}

// CanRead answers what AddReader would, and reserves nothing.
func TestCanRead(t *testing.T) {
	var admit error
	h := New(Config{MaxReaders: func(string) int { return 1 }, Admit: func() error { return admit }})
	if err := h.CanRead("live/a"); !errors.Is(err, ErrNoPublisher) {
		t.Fatalf("no publisher: %v", err)
	}
	mustPublish(t, h, "live/a")
	for range 3 {
		if err := h.CanRead("live/a"); err != nil {
			t.Fatalf("free path: %v", err)
		}
	}
	mustReader(t, h, "live/a", "one")
	if err := h.CanRead("live/a"); !errors.Is(err, ErrPathFull) {
		t.Fatalf("full path: %v", err)
	}
	admit = errors.New("CPU at 95%")
	if err := h.CanRead("live/b"); !errors.Is(err, ErrServerFull) {
		t.Fatalf("admission refused: %v", err)
	}
	if n := h.ReadersTotal(); n != 1 {
		t.Fatalf("%d readers reserved, want 1", n)
	}
}
