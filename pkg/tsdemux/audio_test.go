package tsdemux

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// audioOut collects what the audio hooks receive.
type audioOut struct {
	tracks []av.AudioTrack
	units  []av.AudioUnit
}

// demuxAudio runs demux with the audio hooks on a stream that must end
// cleanly.
func demuxAudio(t *testing.T, data []byte) (result, *audioOut) {
	t.Helper()
	var out audioOut
	res := demux(t, bytes.NewReader(data), withAudio(&out))
	if res.err != nil {
		t.Fatal(res.err)
	}
	return res, &out
}

func withAudio(o *audioOut) func(*Demuxer) {
	return func(d *Demuxer) {
		d.onAudio = func(u av.AudioUnit) { o.units = append(o.units, u) }
		d.onAudioTrack = func(t av.AudioTrack) { o.tracks = append(o.tracks, t) }
	}
}

// newAVBuilder is newTSBuilder with an arbitrary audio track.
func newAVBuilder(t testing.TB, audio *mpegts.Track) *tsBuilder {
	b := &tsBuilder{t: t, video: &mpegts.Track{Codec: &mpegts.CodecH264{}}, aac: audio}
	b.w = mpegts.Writer{W: &b.buf, Tracks: []*mpegts.Track{b.video, audio}}
	if err := b.w.Initialize(); err != nil {
		t.Fatal(err)
	}
	return b
}

// mp2Frame is an MPEG-1 layer II frame header (48 kHz, 128 kbit/s, stereo)
// padded to its 384-byte length; the decoder would hear silence.
func mp2Frame() []byte {
	f := make([]byte, 384)
	copy(f, []byte{0xff, 0xfd, 0x84, 0x00})
	return f
}

// opusPacket is a 20 ms CELT fullband packet (TOC config 31, one frame).
var opusPacket = []byte{0xfc, 0xff, 0xfe}

var aacTrack = mpegts.Track{Codec: &mpegts.CodecMPEG4Audio{Config: mpeg4audio.AudioSpecificConfig{
	Type: mpeg4audio.ObjectTypeAACLC, SampleRate: 44100, ChannelCount: 2,
}}}

type audioCase struct {
	name      string
	track     mpegts.Track
	write     func(b *tsBuilder, pts int64) // one PES of two frames
	frameTick int64                         // 90 kHz ticks between the two frames
	want      av.AudioTrack
}

var audioCases = []audioCase{
	{
		name:  "AAC ADTS 44.1 kHz",
		track: aacTrack,
		write: func(b *tsBuilder, pts int64) {
			if err := b.w.WriteMPEG4Audio(b.aac, pts&(1<<33-1), [][]byte{{0x21, 0x10, 0x04}, {0x21, 0x10, 0x05}}); err != nil {
				b.t.Fatal(err)
			}
		},
		frameTick: 1024 * 90000 / 44100,
		want:      av.AudioTrack{Codec: av.AudioCodecAAC, SampleRate: 44100, Channels: 2, Config: []byte{0x12, 0x10}},
	},
	{
		name:  "MP2",
		track: mpegts.Track{Codec: &mpegts.CodecMPEG1Audio{}},
		write: func(b *tsBuilder, pts int64) {
			if err := b.w.WriteMPEG1Audio(b.aac, pts&(1<<33-1), [][]byte{mp2Frame(), mp2Frame()}); err != nil {
				b.t.Fatal(err)
			}
		},
		frameTick: 1152 * 90000 / 48000,
		want:      av.AudioTrack{Codec: av.AudioCodecMPEG1, SampleRate: 48000, Channels: 2, Layer: 2},
	},
	{
		name:  "Opus",
		track: mpegts.Track{Codec: &mpegts.CodecOpus{ChannelCount: 2}},
		write: func(b *tsBuilder, pts int64) {
			if err := b.w.WriteOpus(b.aac, pts&(1<<33-1), [][]byte{opusPacket, opusPacket}); err != nil {
				b.t.Fatal(err)
			}
		},
		frameTick: 1800,
		want:      av.AudioTrack{Codec: av.AudioCodecOpus, SampleRate: 48000, Channels: 2},
	},
}

// Audio PTS must land on the video's output clock, whichever track comes
// first and across the 33-bit wrap, because lip sync is derived from it.
func TestAudioClock(t *testing.T) {
	for _, tc := range audioCases {
		for _, start := range []struct {
			name        string
			v0          int64
			audioBefore bool
		}{
			{"video first", 900000, false},
			{"audio first", 900000, true},
			{"across wrap", 1<<33 - 4*3000, false},
		} {
			t.Run(tc.name+"/"+start.name, func(t *testing.T) {
				track := tc.track
				b := newAVBuilder(t, &track)
				if start.audioBefore {
					tc.write(b, start.v0-2000)
				}
				pts := b.gop(start.v0, 3, true)
				tc.write(b, start.v0+500)
				pts = b.gop(pts, 5, false) // crosses the wrap in that case
				tc.write(b, start.v0+500+8*3000)
				res, out := demuxAudio(t, b.bytes())
				if len(res.aus) != 8 || res.stats.DecodeErrors != 0 || res.stats.AudioErrors != 0 {
					t.Fatalf("%d AUs, stats %+v", len(res.aus), res.stats)
				}
				if len(out.tracks) != 1 || !equalTrack(out.tracks[0], tc.want) {
					t.Errorf("tracks %+v, want one %+v", out.tracks, tc.want)
				}
				var want []int64
				if start.audioBefore {
					want = append(want, -2000, -2000+tc.frameTick)
				}
				want = append(want, 500, 500+tc.frameTick, 500+8*3000, 500+8*3000+tc.frameTick)
				if len(out.units) != len(want) || res.stats.AudioUnits != uint64(len(want)) {
					t.Fatalf("%d audio units (stats %d), want %d", len(out.units), res.stats.AudioUnits, len(want))
				}
				for i, u := range out.units {
					if got := u.PTS - res.aus[0].PTS; got != want[i] {
						t.Errorf("audio unit %d at %+d ticks from the first picture, want %+d", i, got, want[i])
					}
				}
			})
		}
	}
}

func equalTrack(a, b av.AudioTrack) bool {
	return a.Codec == b.Codec && a.SampleRate == b.SampleRate && a.Channels == b.Channels &&
		a.Layer == b.Layer && bytes.Equal(a.Config, b.Config)
}

// A broken audio track costs sound only: every picture still comes out,
// video counters stay clean, and audio problems are summarised as audio.
func TestAudioDamage(t *testing.T) {
	b := newAVBuilder(t, &mpegts.Track{Codec: &mpegts.CodecMPEG1Audio{}})
	pts := b.gop(0, 3, true)
	write := func(pts int64, frames ...[]byte) {
		if err := b.w.WriteMPEG1Audio(b.aac, pts, frames); err != nil {
			t.Fatal(err)
		}
	}
	write(100, mp2Frame())
	write(3000, bytes.Repeat([]byte{0x55}, 200)) // no sync word
	write(6000, mp2Frame()[:100])                // truncated frame
	write(20*90000, mp2Frame())                  // 20 s away from video
	write(200, mp2Frame())                       // before the last audio
	pts = b.gop(pts, 4, false)
	write(pts, mp2Frame())
	res, out := demuxAudio(t, b.bytes())
	if len(res.aus) != 7 || res.stats.DecodeErrors != 0 || res.stats.DroppedAUs != 0 {
		t.Errorf("%d AUs (want 7), stats %+v", len(res.aus), res.stats)
	}
	if res.stats.AudioErrors != 4 || res.stats.AudioUnits != 2 || len(out.units) != 2 {
		t.Errorf("stats %+v, %d units; want 4 audio errors and 2 units", res.stats, len(out.units))
	}
	// As for video: the first error is logged at once, the rest summarised.
	w := res.logs.level(slog.LevelWarn)
	if len(w) != 2 || !strings.Contains(w[0], "audio decode errors") || !strings.Contains(w[0], "video is not affected") ||
		!strings.Contains(w[0], "sync word not found") || !strings.Contains(w[1], "errors=3 total=4") {
		t.Errorf("want two audio summaries, got %q", w)
	}
}

func TestAudioFromFFmpegClip(t *testing.T) {
	res, out := demuxAudio(t, readClip(t, "h264_aac.ts"))
	if len(res.aus) != 25 || res.stats.AudioErrors != 0 || res.stats.DecodeErrors != 0 {
		t.Errorf("%d AUs, stats %+v", len(res.aus), res.stats)
	}
	// 1 s at 48 kHz is 46.9 AAC frames; ffmpeg ends on a whole frame.
	if n := len(out.units); n < 46 || n > 48 {
		t.Errorf("%d AAC frames, want about 47", n)
	}
	for i := 1; i < len(out.units); i++ {
		if d := out.units[i].PTS - out.units[i-1].PTS; d != 1920 {
			t.Errorf("AAC frame %d: step %d, want 1920", i, d)
		}
	}
	if len(out.tracks) != 1 || out.tracks[0].SampleRate != 48000 || out.tracks[0].Codec != av.AudioCodecAAC {
		t.Errorf("tracks %+v", out.tracks)
	}
	if w := res.logs.level(slog.LevelWarn); len(w) != 0 {
		t.Errorf("unexpected warnings: %q", w)
	}
}
