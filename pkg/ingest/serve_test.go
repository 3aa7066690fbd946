package ingest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/events"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/rtph264"
	"github.com/srtwhep/srtwhep/pkg/tsdemux"
)

// The clips' golden values, as pkg/tsdemux's tests read them: h264.ts is
// 50 pictures at 25 fps with IDRs at 0 and 30; h264_aac.ts is 25
// pictures (one GOP) and 1 s of 48 kHz AAC.
var clipInfo = av.StreamInfo{Codec: "H264", Profile: "Constrained Baseline", Width: 320, Height: 240, FPS: 25, ProfileLevelID: "42c00d"}

// TestServeClip: an ffmpeg clip with AAC goes from the connection through
// the demuxer to the hub: every picture, IDR first, with its RTP payloads
// cut once; the audio both as Opus for WebRTC readers and as AAC for
// readers that pass the stream on; the counters and the events of a
// publisher that came and left. With audio off for the path, video flows
// alone.
func TestServeClip(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings AudioSettings
		audio    bool
	}{
		{"audio transcoded", AudioSettings{}, true},
		{"audio off", AudioSettings{Off: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Config{Audio: func(string) AudioSettings { return tc.settings }})
			data := clip(t, "h264_aac.ts")
			c := newMemConn("live/clip", 7, data)
			// At the last picture's first packet the stream has started
			// (mediacommon reads up to the first audio PES, well into the
			// clip, before it knows the tracks) and every other picture is
			// in the hub: a reader added there gets the GOP from the cache,
			// then the rest live, with no gap and no duplicate.
			starts := videoPES(data)
			c.pauseAt = starts[len(starts)-1]
			var source *hub.Reader
			r.onEvent = func(e events.Event) {
				if e.Kind == events.PublisherConnected {
					source = r.reader(t, "live/clip", (*hub.Reader).AttachSource)
				}
			}
			done := r.serve(t, c)
			<-c.paused
			testkit.WaitFor(t, 5*time.Second, "the IDR in the hub", func() bool { return r.hub.State("live/clip").Playable })
			wantIn, wantOut := "", ""
			if tc.audio {
				wantIn, wantOut = "AAC", "Opus"
			}
			if ps, _ := pathStats(r.m, "live/clip"); ps.Publisher == nil || !ps.Publisher.Streaming || ps.Publisher.Remote != c.remote ||
				ps.Readers != 1 || ps.Info != clipInfo || ps.AudioIn != wantIn || ps.AudioOut != wantOut {
				t.Errorf("stats while streaming: %+v (publisher %+v), want audio %q→%q", ps, ps.Publisher, wantIn, wantOut)
			}
			viewer := r.reader(t, "live/clip", (*hub.Reader).AttachAV)
			if viewer.HasAudio() != tc.audio {
				t.Errorf("HasAudio = %v, want %v", viewer.HasAudio(), tc.audio)
			}
			close(c.resume)
			if err := wait(t, done); err != nil {
				t.Fatalf("Serve = %v, want nil at the end of the stream", err)
			}

			video, opus, _ := split(t, drain(viewer))
			srcVideo, _, aac := split(t, drain(source))
			if len(video) != 25 || len(srcVideo) != 25 {
				t.Fatalf("%d pictures to the viewer, %d to the source reader, want the clip's 25", len(video), len(srcVideo))
			}
			size := 0
			for i, au := range video {
				if au.IDR != (i == 0) || au != srcVideo[i] {
					t.Errorf("picture %d: IDR %v, shared with the other reader %v", i, au.IDR, au == srcVideo[i])
				}
				if want := rtph264.Fragment(au.NALUs, rtph264.DefaultMaxPayload); !slices.EqualFunc(au.Payloads, want, slices.Equal) {
					t.Errorf("picture %d: %d payloads, want the %d cut from its NAL units", i, len(au.Payloads), len(want))
				}
				size += au.Size
			}

			ps, ok := pathStats(r.m, "live/clip")
			if !ok || ps.Publisher != nil || ps.Info != clipInfo || ps.AudioIn != wantIn || ps.AudioOut != wantOut {
				t.Fatalf("stats after the publisher left: %+v, want its totals, info and audio %q→%q kept", ps, wantIn, wantOut)
			}
			tot := ps.Totals
			if tot.IngestFrames != 25 || tot.IngestBytes != uint64(size) || tot.DecodeErrors != 0 || tot.AudioErrors != 0 ||
				tot.DroppedDecodeError != 0 || tot.DroppedSlowReader != 0 {
				t.Errorf("totals %+v, want 25 pictures of %d bytes and nothing dropped", tot, size)
			}
			// 1 s at 48 kHz is 46.9 AAC frames; ffmpeg ends on a whole one.
			if tot.AudioFramesIn < 46 || tot.AudioFramesIn > 48 {
				t.Errorf("%d AAC frames read, want about 47", tot.AudioFramesIn)
			}
			if !tc.audio {
				if len(opus) != 0 || len(aac) != 0 || tot.AudioFramesOut != 0 {
					t.Errorf("audio off: %d Opus and %d AAC frames reached the readers, totals %+v", len(opus), len(aac), tot)
				}
				r.logs.WaitLog(t, time.Second, "audio track not sent: audio is off for this path", "codec=AAC")
				return
			}
			// The source reader was there from the start: every AAC frame.
			if uint64(len(aac)) != tot.AudioFramesIn || aac[0].Track == nil || aac[0].Track.Codec != av.AudioCodecAAC {
				t.Errorf("%d AAC units to the source reader, want all %d, with their track", len(aac), tot.AudioFramesIn)
			}
			// 20 ms Opus frames for 1 s of sound, handed over once each;
			// the viewer gets those that play from its first picture on.
			if tot.AudioFramesOut < 45 || len(opus) == 0 || uint64(len(opus)) > tot.AudioFramesOut {
				t.Errorf("%d Opus frames made, %d to the viewer; want about 50, the viewer's among them", tot.AudioFramesOut, len(opus))
			}
			for i, af := range opus {
				if af.PTS < video[0].PTS || i > 0 && af.PTS <= opus[i-1].PTS {
					t.Errorf("Opus frame %d at %d: before the first picture (%d) or out of order", i, af.PTS, video[0].PTS)
					break
				}
			}

			want := []events.Event{
				{Kind: events.PublisherConnected, Path: "live/clip", Protocol: "srt", ID: "7", Remote: c.remote},
				{Kind: events.PublisherDisconnected, Path: "live/clip", Protocol: "srt", ID: "7", Remote: c.remote, Reason: "publisher disconnected"},
			}
			if got := r.seen(); !slices.Equal(got, want) {
				t.Errorf("events\n%+v, want\n%+v", got, want)
			}
		})
	}
}

// videoPES returns the offsets of the TS packets that start a video PES
// (PID 256, as ffmpeg muxes it, with payload_unit_start_indicator).
func videoPES(ts []byte) []int {
	var out []int
	for off := 0; off+188 <= len(ts); off += 188 {
		if pid := int(ts[off+1]&0x1f)<<8 | int(ts[off+2]); pid == 256 && ts[off+1]&0x40 != 0 {
			out = append(out, off)
		}
	}
	return out
}

// split sorts a reader's frames by kind, checking each frame is one kind.
func split(t *testing.T, frames []hub.Frame) (video []*av.AccessUnit, opus []*av.AudioFrame, src []*av.AudioUnit) {
	t.Helper()
	for _, f := range frames {
		switch {
		case f.Video != nil:
			video = append(video, f.Video)
		case f.Audio != nil:
			opus = append(opus, f.Audio)
		case f.Source != nil:
			src = append(src, f.Source)
		default:
			t.Error("an empty frame in the queue")
		}
	}
	return video, opus, src
}

// TestServeRefuses: a stream the server cannot serve ends its publisher
// with an error that names the fix. Garbage and a stream without H.264
// never claim the path, announce it or leave statistics behind, so they
// cannot disturb a path's real publisher; B-frames are only seen once the
// stream has started, and end it with the fix as the event's reason
// (with video: passthrough; auto transcodes them, TestVideoTranscoded).
func TestServeRefuses(t *testing.T) {
	garbage := make([]byte, 64<<10)
	for i := range garbage {
		garbage[i] = byte(i*7 + i>>8) // no 0x47 sync every 188 bytes
	}
	for _, tc := range []struct {
		name    string
		data    []byte
		err     error
		fix     string
		started bool
	}{
		{"garbage", garbage, tsdemux.ErrNoPMT, "ffmpeg -f mpegts", false},
		{"H.265 with B-frames", clip(t, "h265_aac.ts"), tsdemux.ErrBFrames, "encode with -bf 0 (ffmpeg) or set B-frames to 0 in OBS", true},
		{"B-frames", clip(t, "h264_bframes.ts"), tsdemux.ErrBFrames, "encode with -bf 0 (ffmpeg) or set B-frames to 0 in OBS", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// passthrough: the refusal auto replaces with the transcoder.
			r := newRig(t, Config{Video: func(string) VideoSettings { return VideoSettings{Mode: VideoPassthrough} }})
			c := newMemConn("live/bad", 3, tc.data)
			err := wait(t, r.serve(t, c))
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.fix) {
				t.Fatalf("Serve = %v, want %v naming %q", err, tc.err, tc.fix)
			}
			ps, remembered := pathStats(r.m, "live/bad")
			ev := r.seen()
			if !tc.started {
				// The path is listed only for its refusal (refusals.go).
				if remembered && (ps.Problem == nil || ps.Totals != (Totals{})) || len(ev) != 0 || r.hub.State("live/bad") != (hub.PathState{}) {
					t.Errorf("a stream that never started left stats %+v, events %+v, hub state %+v", ps, ev, r.hub.State("live/bad"))
				}
				return
			}
			if len(ev) != 2 || ev[0].Kind != events.PublisherConnected || ev[1].Kind != events.PublisherDisconnected || ev[1].Reason != err.Error() {
				t.Errorf("events %+v, want connected, then disconnected with the error as reason", ev)
			}
			if ps.Totals.DroppedBFrames != 1 || ps.Totals.IngestFrames == 0 {
				t.Errorf("totals %+v, want the pictures before the refusal and 1 B-frame dropped", ps.Totals)
			}
		})
	}
}
