package audio

import (
	"math"
	"strings"
	"testing"

	hopus "gopkg.in/hraban/opus.v2"

	"github.com/srtwhep/srtwhep/pkg/av"
)

const clipSeconds = 2

// Every audio form a publisher may send must come out as Opus that still
// sounds like the 1 kHz tone that went in, at 20 ms per frame on the
// video's clock, while every video picture still comes out.
func TestTranscodeTone(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rate     int
		args     []string
		want     av.AudioTrack
		passthru bool
	}{
		{"AAC 44.1 kHz stereo", 44100, []string{"-c:a", "aac", "-b:a", "128k", "-ac", "2"},
			av.AudioTrack{Codec: av.AudioCodecAAC, SampleRate: 44100, Channels: 2}, false},
		{"AAC 48 kHz mono", 48000, []string{"-c:a", "aac", "-b:a", "64k", "-ac", "1"},
			av.AudioTrack{Codec: av.AudioCodecAAC, SampleRate: 48000, Channels: 1}, false},
		{"AAC LATM 44.1 kHz", 44100, []string{"-c:a", "aac", "-b:a", "96k", "-ac", "2", "-mpegts_flags", "latm"},
			av.AudioTrack{Codec: av.AudioCodecAAC, SampleRate: 44100, Channels: 2}, false},
		{"MP2 48 kHz stereo", 48000, []string{"-c:a", "mp2", "-b:a", "192k", "-ac", "2"},
			av.AudioTrack{Codec: av.AudioCodecMPEG1, SampleRate: 48000, Channels: 2, Layer: 2}, false},
		{"MP2 44.1 kHz mono", 44100, []string{"-c:a", "mp2", "-b:a", "96k", "-ac", "1"},
			av.AudioTrack{Codec: av.AudioCodecMPEG1, SampleRate: 44100, Channels: 1, Layer: 2}, false},
		{"MP3 44.1 kHz stereo", 44100, []string{"-c:a", "libmp3lame", "-b:a", "128k", "-ac", "2"},
			av.AudioTrack{Codec: av.AudioCodecMPEG1, SampleRate: 44100, Channels: 2, Layer: 3}, false},
		{"Opus stereo", 48000, []string{"-c:a", "libopus", "-b:a", "96k", "-ac", "2"},
			av.AudioTrack{Codec: av.AudioCodecOpus, SampleRate: 48000, Channels: 2}, true},
		{"Opus mono", 48000, []string{"-c:a", "libopus", "-b:a", "48k", "-ac", "1"},
			av.AudioTrack{Codec: av.AudioCodecOpus, SampleRate: 48000, Channels: 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := runPipeline(t, ffmpegTS(t, clipSeconds, tc.rate, tc.args...), Config{})
			if p.video != clipSeconds*30 || p.demux.DecodeErrors != 0 {
				t.Errorf("%d pictures (want %d), demux stats %+v", p.video, clipSeconds*30, p.demux)
			}
			if len(p.tracks) != 1 || p.tracks[0].Codec != tc.want.Codec || p.tracks[0].SampleRate != tc.want.SampleRate ||
				p.tracks[0].Channels != tc.want.Channels || p.tracks[0].Layer != tc.want.Layer {
				t.Fatalf("tracks %+v, want one %+v", p.tracks, tc.want)
			}
			if p.demux.AudioErrors != 0 || p.trans.Errors != 0 {
				t.Errorf("errors: demux %d, transcoder %d", p.demux.AudioErrors, p.trans.Errors)
			}
			if w := p.warnings(); len(w) != 0 {
				t.Errorf("unexpected warnings %q", w)
			}
			if p.trans.FramesIn != uint64(len(p.units)) || p.trans.FramesOut != uint64(len(p.frames)) {
				t.Errorf("stats %+v for %d in, %d out", p.trans, len(p.units), len(p.frames))
			}
			if !tc.passthru && p.trans.CPU <= 0 {
				t.Errorf("CPU time not accounted: %+v", p.trans)
			}
			checkTiming(t, p, tc.passthru)
			checkTone(t, p.frames)
		})
	}
}

// checkTiming: 20 ms per frame exactly, no drift, starting where the
// input's audio starts.
func checkTiming(t *testing.T, p *pipeline, passthru bool) {
	t.Helper()
	// The last partial frame stays in the resampler (under 20 ms), and
	// ffmpeg's own frame sizes round the clip's end.
	if n := len(p.frames); n < clipSeconds*50-3 || n > clipSeconds*50+3 {
		t.Fatalf("%d Opus frames for %d s", n, clipSeconds)
	}
	if d := p.frames[0].PTS - p.units[0].PTS; d < -frameTicks || d > frameTicks {
		t.Errorf("first Opus PTS %d is %+d ticks from the first input PTS %d", p.frames[0].PTS, d, p.units[0].PTS)
	}
	for i, f := range p.frames {
		if f.Duration != frameSamples {
			t.Errorf("frame %d: duration %d", i, f.Duration)
		}
		if i > 0 && f.PTS-p.frames[i-1].PTS != frameTicks {
			t.Errorf("frame %d: PTS step %d, want %d", i, f.PTS-p.frames[i-1].PTS, frameTicks)
		}
		if passthru && !samePacket(f.Data, p.units[i].Data) {
			t.Errorf("frame %d: Opus passthrough changed the packet", i)
		}
	}
}

func samePacket(a, b []byte) bool { return string(a) == string(b) }

// checkTone decodes the Opus and checks both channels carry the tone:
// loud enough, and with its energy at 1 kHz. Each frame is placed at its
// PTS, gaps left silent, so a frame stamped at the wrong time puts the
// tone out of phase with itself and fails the check.
func checkTone(t *testing.T, frames []*av.AudioFrame) {
	t.Helper()
	for ch, level := range toneLevels(t, frames) {
		if level.dbfs < -40 || level.share < 0.9 {
			t.Errorf("channel %d: %.1f dBFS with %.3f of the energy at 1 kHz; want a 1 kHz tone above -40 dBFS", ch, level.dbfs, level.share)
		}
	}
}

type toneLevel struct{ dbfs, share float64 }

// toneLevels decodes the Opus and measures the tone on each channel.
func toneLevels(t *testing.T, frames []*av.AudioFrame) []toneLevel {
	t.Helper()
	dec, err := hopus.NewDecoder(av.OpusClockRate, channels)
	if err != nil {
		t.Fatal(err)
	}
	var pcm []float32
	buf := make([]float32, 5760*channels)
	for i, f := range frames {
		n, err := dec.DecodeFloat32(f.Data, buf)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		at := int((f.PTS-frames[0].PTS)*av.OpusClockRate/av.ClockRate) * channels
		if end := at + n*channels; end > len(pcm) {
			pcm = append(pcm, make([]float32, end-len(pcm))...)
		}
		copy(pcm[at:], buf[:n*channels])
	}
	return interleavedToneLevels(t, pcm, channels, av.OpusClockRate)
}

// interleavedToneLevels measures the 1 kHz tone on each channel of
// interleaved samples, past codec start-up (priming, encoder ramp) and
// before the end.
func interleavedToneLevels(t *testing.T, pcm []float32, nch, rate int) []toneLevel {
	t.Helper()
	skip := rate / 5
	var out []toneLevel
	for ch := range nch {
		var x []float64
		for i := skip * nch; i+ch < len(pcm)-skip*nch/2; i += nch {
			x = append(x, float64(pcm[i+ch]))
		}
		x = x[:len(x)/(rate/1000)*(rate/1000)] // whole cycles of 1 kHz
		level, share := toneStats(x, 1000, float64(rate))
		t.Logf("channel %d: %.2f dBFS, %.3f of the energy at 1 kHz", ch, level, share)
		out = append(out, toneLevel{level, share})
	}
	return out
}

// toneStats returns the level in dBFS (a full-scale sine is 0 dBFS) and
// the share of the signal's energy in the DFT bin of freq (Goertzel).
func toneStats(x []float64, freq, rate float64) (dbfs, share float64) {
	var energy float64
	for _, v := range x {
		energy += v * v
	}
	if energy == 0 {
		return math.Inf(-1), 0
	}
	rms := math.Sqrt(energy / float64(len(x)))
	coeff := 2 * math.Cos(2*math.Pi*freq/rate)
	var s1, s2 float64
	for _, v := range x {
		s1, s2 = v+coeff*s1-s2, s1
	}
	power := s1*s1 + s2*s2 - coeff*s1*s2
	return 20 * math.Log10(rms*math.Sqrt2), 2 * power / (float64(len(x)) * energy)
}

// Audio that cannot be read costs the sound only: every picture comes out
// and one warning tells the publisher what to change.
func TestUnreadableAudio(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate int
		args []string
		want []string
	}{
		{"MP2 22.05 kHz", 22050, []string{"-c:a", "mp2", "-b:a", "64k"},
			[]string{"22050 Hz", "below 32 kHz", "-ar 48000", "-c:a aac or -c:a libopus"}},
		{"AC-3", 48000, []string{"-c:a", "ac3"},
			[]string{"AC-3 is not supported", "-c:a aac or -c:a libopus"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := runPipeline(t, ffmpegTS(t, clipSeconds, tc.rate, tc.args...), Config{})
			if p.video != clipSeconds*30 || p.demux.DecodeErrors != 0 {
				t.Errorf("%d pictures (want %d), demux stats %+v", p.video, clipSeconds*30, p.demux)
			}
			if len(p.tracks) != 0 || len(p.units) != 0 {
				t.Errorf("audio came out: %+v, %d units", p.tracks, len(p.units))
			}
			w := p.warnings()
			if len(w) != 1 {
				t.Fatalf("want one warning, got %q", w)
			}
			for _, s := range append(tc.want, "path=live/test") {
				if !strings.Contains(w[0], s) {
					t.Errorf("warning %q lacks %q", w[0], s)
				}
			}
		})
	}
}

// A damaged AAC track: the damage is counted and skipped, sound resumes
// after it, the output timeline stays monotonic, and video is untouched.
func TestCorruptedAAC(t *testing.T) {
	clip := ffmpegTS(t, clipSeconds, 44100, "-c:a", "aac", "-b:a", "128k", "-ac", "2")
	damaged := corruptPES(t, clip, audioPID, 40)
	p := runPipeline(t, damaged, Config{})
	if p.video != clipSeconds*30 || p.demux.DecodeErrors != 0 {
		t.Errorf("%d pictures (want %d), demux stats %+v", p.video, clipSeconds*30, p.demux)
	}
	skipped := p.demux.AudioErrors + p.trans.Errors
	t.Logf("demux %+v, transcoder %+v, %d Opus frames", p.demux, p.trans, len(p.frames))
	if skipped == 0 {
		t.Error("damage went unnoticed")
	}
	if len(p.frames) < clipSeconds*50/2 {
		t.Errorf("only %d Opus frames survived", len(p.frames))
	}
	for i := 1; i < len(p.frames); i++ {
		if p.frames[i].PTS < p.frames[i-1].PTS+frameTicks {
			t.Errorf("frame %d: PTS %d overlaps frame %d at %d", i, p.frames[i].PTS, i-1, p.frames[i-1].PTS)
		}
	}
	for _, w := range p.warnings() {
		if !strings.Contains(w, "audio") || !strings.Contains(w, "video is not affected") {
			t.Errorf("warning not about audio: %q", w)
		}
	}
}

// audioPID is where ffmpeg's mpegts muxer puts the second stream.
const audioPID = 0x101

// corruptPES overwrites payload bytes of every nth TS packet of pid,
// sparing the first PES so the program can still be identified, and the
// TS and PES headers so the damage lands in the audio itself.
func corruptPES(t *testing.T, ts []byte, pid uint16, nth int) []byte {
	t.Helper()
	out := append([]byte(nil), ts...)
	seen, hit := 0, 0
	for off := 0; off+188 <= len(out); off += 188 {
		pkt := out[off : off+188]
		if pkt[0] != 0x47 || (uint16(pkt[1]&0x1f)<<8|uint16(pkt[2])) != pid {
			continue
		}
		seen++
		if seen <= 8 || seen%nth != 0 {
			continue
		}
		start := 4
		if pkt[3]&0x20 != 0 {
			start += 1 + int(pkt[4])
		}
		if pkt[1]&0x40 != 0 {
			start += 9 + 5 // PES header with a PTS
		}
		for i := start + 4; i < start+40 && i < 188; i++ {
			pkt[i] ^= 0xa5
		}
		hit++
	}
	if hit == 0 {
		t.Fatalf("no TS packets of PID %d to damage", pid)
	}
	return out
}

// A lost input frame must cost a gap, not lip sync: the run before it is
// flushed on its own timeline and the next run starts exactly at the PTS
// of the first frame after the gap.
func TestGapRestartsRun(t *testing.T) {
	p := runPipeline(t, ffmpegTS(t, clipSeconds, 44100, "-c:a", "aac", "-b:a", "128k", "-ac", "2"), Config{})
	const lost = 40 // units 40, 41 and 42 are lost
	var frames []*av.AudioFrame
	tr, err := New(p.tracks[0], Config{}, func(f *av.AudioFrame) { frames = append(frames, f) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	for i, u := range p.units {
		if i < lost || i > lost+2 {
			tr.Write(u)
		}
	}
	resume := p.units[lost+3].PTS
	restart := -1
	for i, f := range frames {
		if f.PTS == resume {
			restart = i
		}
		if i > 0 && f.PTS < frames[i-1].PTS+frameTicks {
			t.Errorf("frame %d at %d overlaps frame %d at %d", i, f.PTS, i-1, frames[i-1].PTS)
		}
		if i > 0 && i != restart && f.PTS != frames[i-1].PTS+frameTicks {
			t.Errorf("frame %d: step %d inside a run", i, f.PTS-frames[i-1].PTS)
		}
	}
	if restart < 0 {
		t.Fatalf("no output frame starts at the resumed input PTS %d", resume)
	}
	if s := tr.Stats(); s.Errors != 0 {
		t.Errorf("stats %+v", s)
	}
	checkTone(t, frames)
}

func TestNewRefusesUnknownInput(t *testing.T) {
	for _, tr := range []av.AudioTrack{
		{Codec: av.AudioCodecUnknown},
		{Codec: av.AudioCodecMPEG1, SampleRate: 48000, Channels: 2, Layer: 1},
	} {
		if _, err := New(tr, Config{}, func(*av.AudioFrame) {}); err == nil {
			t.Errorf("New(%+v) succeeded", tr)
		}
	}
	tr, err := New(av.AudioTrack{Codec: av.AudioCodecAAC, SampleRate: 48000, Channels: 2}, Config{}, func(*av.AudioFrame) {})
	if err != nil {
		t.Fatal(err)
	}
	tr.Close()
	tr.Close() // twice is allowed
	tr.Write(av.AudioUnit{PTS: 0, Data: []byte{1, 2, 3}})
	if s := tr.Stats(); s.FramesIn != 1 || s.FramesOut != 0 {
		t.Errorf("Write after Close: %+v", s)
	}
}

// When the input PTS goes back, the frames that would overlap what was
// already sent are dropped, and only those: once the input is past the
// old end, one run continues without restarts.
func TestRecoversAfterOverlap(t *testing.T) {
	p := runPipeline(t, ffmpegTS(t, clipSeconds, 44100, "-c:a", "aac", "-b:a", "128k", "-ac", "2"), Config{})
	const first, back = 60, 20
	var frames []*av.AudioFrame
	tr, err := New(p.tracks[0], Config{}, func(f *av.AudioFrame) { frames = append(frames, f) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	units := append(append([]av.AudioUnit(nil), p.units[:first]...), p.units[back:]...)
	for _, u := range units {
		tr.Write(u)
	}
	// Each replayed unit (~23 ms) completes about one frame, all refused.
	if s := tr.Stats(); s.Errors > first-back+2 {
		t.Errorf("%d errors for %d replayed units: %+v", s.Errors, first-back, s)
	}
	restarts := 0
	for i := 1; i < len(frames); i++ {
		if step := frames[i].PTS - frames[i-1].PTS; step < frameTicks {
			t.Errorf("frame %d at %d overlaps frame %d at %d", i, frames[i].PTS, i-1, frames[i-1].PTS)
		} else if step != frameTicks {
			restarts++
		}
	}
	if restarts > 1 {
		t.Errorf("%d restarts, want 1", restarts)
	}
	last := p.units[len(p.units)-1].PTS
	if end := frames[len(frames)-1].PTS; end < last-2*frameTicks {
		t.Errorf("output ends at %d, input at %d", end, last)
	}
}
