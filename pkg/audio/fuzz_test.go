package audio

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/tsdemux"
)

// A fuzzed input is a track (an index into fuzzTracks) and a script of
// coded frames, each a 4-byte header and its bytes:
//
//	length  uint16, big endian (fewer bytes if the input ends first)
//	skew    int16, big endian: PTS offset, in 90 kHz ticks, from where
//	        the previous frame plus the codec's frame duration puts it
//
// so the fuzzer varies what a publisher controls, the frames' bytes and
// their timing, and spends no effort keeping timestamps plausible.
const scriptHeader = 4

// fuzzTrack is a track the transcoder is opened for, with the duration
// of one of its frames on the 90 kHz clock.
type fuzzTrack struct {
	track av.AudioTrack
	ticks int64
}

// fuzzTracks are what a publisher's audio can be: the AAC of the
// committed ffmpeg clip, AAC at 44.1 kHz stereo, MP2 and MP3 at 48 kHz.
func fuzzTracks(t testing.TB) []fuzzTrack {
	clip, _ := clipAudio(t)
	conf, err := (&mpeg4audio.AudioSpecificConfig{Type: mpeg4audio.ObjectTypeAACLC, SampleRate: 44100, ChannelCount: 2}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return []fuzzTrack{
		{clip, 1024 * av.ClockRate / int64(clip.SampleRate)},
		{av.AudioTrack{Codec: av.AudioCodecAAC, SampleRate: 44100, Channels: 2, Config: conf}, 1024 * av.ClockRate / 44100},
		{av.AudioTrack{Codec: av.AudioCodecMPEG1, SampleRate: 48000, Channels: 2, Layer: 2}, 1152 * av.ClockRate / 48000},
		{av.AudioTrack{Codec: av.AudioCodecMPEG1, SampleRate: 48000, Channels: 2, Layer: 3}, 1152 * av.ClockRate / 48000},
	}
}

// clipAudio is the audio of tsdemux's committed H.264+AAC clip (ffmpeg's
// AAC encoder) as the demuxer hands it on.
func clipAudio(t testing.TB) (av.AudioTrack, []av.AudioUnit) {
	ts, err := os.ReadFile(filepath.Join("..", "tsdemux", "testdata", "h264_aac.ts"))
	if err != nil {
		t.Fatal(err)
	}
	var track av.AudioTrack
	var units []av.AudioUnit
	d := tsdemux.New(bytes.NewReader(ts), tsdemux.Config{
		OnAudioTrack: func(at av.AudioTrack) { track = at },
		OnAudio:      func(u av.AudioUnit) { units = append(units, u) },
	})
	if err := d.Run(context.Background(), func(*av.AccessUnit) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if track.Codec != av.AudioCodecAAC || len(units) == 0 {
		t.Fatalf("the clip's audio: %+v, %d units; want AAC", track, len(units))
	}
	return track, units
}

// audioScript encodes units as a script against frames of ticks.
func audioScript(units []av.AudioUnit, ticks int64) []byte {
	var out []byte
	for i, u := range units {
		skew := int64(0)
		if i > 0 {
			skew = max(min(u.PTS-units[i-1].PTS-ticks, 32767), -32768)
		}
		out = binary.BigEndian.AppendUint16(out, uint16(len(u.Data)))
		out = binary.BigEndian.AppendUint16(out, uint16(int16(skew)))
		out = append(out, u.Data...)
	}
	return out
}

// audioSeeds are the clip's AAC frames, the same with one frame's bytes
// damaged and with a gap, and, when the corpus is written, MP2 and MP3
// frames ffmpeg encoded (kept in the checked-in corpus, so fuzzing does
// not run ffmpeg).
func audioSeeds(t testing.TB) [][]any {
	_, units := clipAudio(t)
	units = units[:min(len(units), 12)]
	ticks := fuzzTracks(t)[0].ticks
	seeds := [][]any{{0, audioScript(units, ticks)}}
	damaged := append([]av.AudioUnit(nil), units...)
	for i := range damaged {
		damaged[i].Data = bytes.Clone(damaged[i].Data)
	}
	for i := 5; i < len(damaged[4].Data); i += 3 {
		damaged[4].Data[i] ^= 0x5a
	}
	damaged[8].PTS += 5000
	seeds = append(seeds, []any{0, audioScript(damaged, ticks)}, []any{1, audioScript(units[:4], ticks)}, []any{2, []byte{}})
	if os.Getenv(testkit.WriteCorpusEnv) == "" {
		return seeds
	}
	for i, args := range [][]string{{"-c:a", "mp2", "-b:a", "128k"}, {"-c:a", "libmp3lame", "-b:a", "128k"}} {
		p := runPipeline(t, ffmpegTS(t, 1, 48000, append(args, "-ac", "2")...), Config{})
		u := p.units[:min(len(p.units), 10)]
		seeds = append(seeds, []any{2 + i, audioScript(u, fuzzTracks(t)[2+i].ticks)})
	}
	return seeds
}

// FuzzTranscoder writes arbitrary frames, with arbitrary timing, into a
// real Transcoder (libavcodec, libswresample, libopus) opened for each
// kind of publisher audio. Nothing may crash in Go or C; every frame is
// counted; what comes out is 20 ms Opus packets within their size bound,
// in time order without overlap, no more than the input can decode to;
// and the samples waiting for a whole frame stay within a frame, in a
// buffer of bounded size.
func FuzzTranscoder(f *testing.F) {
	for _, s := range audioSeeds(f) {
		f.Add(s[0].(int), s[1].([]byte))
	}
	tracks := fuzzTracks(f)
	f.Fuzz(func(t *testing.T, which int, script []byte) {
		if which < 0 {
			which = -(which + 1)
		}
		ft := tracks[which%len(tracks)]
		var out []*av.AudioFrame
		tr, err := New(ft.track, Config{}, func(fr *av.AudioFrame) { out = append(out, fr) })
		if err != nil {
			t.Fatalf("New(%+v): %v", ft.track, err)
		}
		defer tr.Close()
		var pts int64 = 1 << 30
		written := 0
		for len(script) >= scriptHeader {
			n := min(int(binary.BigEndian.Uint16(script)), len(script)-scriptHeader)
			if written > 0 {
				pts += ft.ticks + int64(int16(binary.BigEndian.Uint16(script[2:])))
			}
			tr.Write(av.AudioUnit{PTS: pts, Data: script[scriptHeader : scriptHeader+n]})
			script = script[scriptHeader+n:]
			written++
			if p := tr.pcm; len(p.pending) >= frameFloats || cap(p.pending) > maxPendingFloats {
				t.Fatalf("frame %d: %d samples wait in a buffer of %d; bounds %d and %d",
					written, len(p.pending), cap(p.pending), frameFloats, maxPendingFloats)
			}
		}
		s := tr.Stats()
		if s.FramesIn != uint64(written) || s.FramesOut != uint64(len(out)) || s.Errors > 2*s.FramesIn {
			t.Fatalf("stats %+v for %d frames in, %d out", s, written, len(out))
		}
		if len(out) > maxFramesPerInput*written {
			t.Fatalf("%d Opus frames from %d input frames, at most %d each", len(out), written, maxFramesPerInput)
		}
		for i, fr := range out {
			if fr.Duration != frameSamples || len(fr.Data) == 0 || len(fr.Data) > maxOpusPacket {
				t.Fatalf("frame %d: %d samples, %d bytes", i, fr.Duration, len(fr.Data))
			}
			if i > 0 && fr.PTS < out[i-1].PTS+frameTicks {
				t.Fatalf("frame %d at %d overlaps frame %d at %d", i, fr.PTS, i-1, out[i-1].PTS)
			}
		}
	})
}

const (
	// maxFramesPerInput bounds the Opus frames one coded frame can give:
	// an HE-AAC frame (2048 samples) at AAC's lowest rate, 7350 Hz, is
	// 13,374 samples at 48 kHz, 14 frames, plus the padded frame of a
	// run restarted by it.
	maxFramesPerInput = 15
	// maxPendingFloats bounds the buffer of resampled samples: it grows
	// to the largest frame one coded frame gives (above) and no further.
	maxPendingFloats = 16 * frameFloats
)

// TestTranscoderSeed checks that the clip's seed reaches the encoder,
// so FuzzTranscoder's output checks have something to check.
func TestTranscoderSeed(t *testing.T) {
	track, units := clipAudio(t)
	var out int
	tr, err := New(track, Config{}, func(*av.AudioFrame) { out++ })
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for _, u := range units[:12] {
		tr.Write(u)
	}
	// 12 frames of 1024 samples are 12,288 samples at the clip's rate.
	if want := 12 * 1024 * 48000 / track.SampleRate / frameSamples; out < want-1 || tr.Stats().Errors != 0 {
		t.Fatalf("%d Opus frames (want %d or %d), stats %+v", out, want-1, want, tr.Stats())
	}
	t.Logf("%s %d Hz, %d channels: 12 frames in, %d Opus frames out", track.Codec, track.SampleRate, track.Channels, out)
}

// TestFuzzCorpusTranscoder writes the seeds as the checked-in corpus when
// asked to (see testkit.SeedCorpus).
func TestFuzzCorpusTranscoder(t *testing.T) {
	testkit.SeedCorpus(t, "FuzzTranscoder", audioSeeds(t)...)
}
