package audio

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A mono source must come out of the transcoder at its own level on both
// Opus channels: swr's default mono→stereo rematrix took 3 dB off (a
// mono AAC at -21.1 dBFS arrived at -24.1). Stereo keeps its level too.
// The reference is the published audio itself, decoded by ffmpeg.
func TestTranscodeKeepsLevel(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"AAC mono", []string{"-c:a", "aac", "-b:a", "96k", "-ac", "1"}},
		{"AAC stereo", []string{"-c:a", "aac", "-b:a", "128k", "-ac", "2"}},
		{"MP2 mono", []string{"-c:a", "mp2", "-b:a", "128k", "-ac", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := ffmpegTS(t, clipSeconds, 48000, tc.args...)
			in := sourceLevel(t, ts)
			p := runPipeline(t, ts, Config{})
			out := toneLevels(t, p.frames)
			t.Logf("source %.2f dBFS; Opus channels %.2f / %.2f dBFS", in, out[0].dbfs, out[1].dbfs)
			for ch, l := range out {
				if d := l.dbfs - in; math.Abs(d) > 0.5 {
					t.Errorf("channel %d: %.2f dBFS, source %.2f dBFS (%+.2f dB; want within 0.5 dB)", ch, l.dbfs, in, d)
				}
			}
		})
	}
}

// sourceLevel decodes the clip's audio with ffmpeg, unconverted (no -ac,
// so ffmpeg's own rematrix stays out of the reference), and measures the
// tone on its first channel.
func sourceLevel(t *testing.T, ts []byte) float64 {
	t.Helper()
	clip := filepath.Join(t.TempDir(), "in.ts")
	if err := os.WriteFile(clip, ts, 0o600); err != nil {
		t.Fatal(err)
	}
	probe, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "a:0",
		"-show_entries", "stream=channels", "-of", "default=nw=1:nk=1", clip).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	nch := int(bytes.TrimSpace(probe)[0] - '0')
	raw, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-i", clip,
		"-map", "0:a", "-f", "f32le", "-c:a", "pcm_f32le", "-").Output()
	if err != nil {
		t.Fatalf("ffmpeg decode: %v", err)
	}
	pcm := make([]float32, len(raw)/4)
	if err := binary.Read(bytes.NewReader(raw), binary.LittleEndian, pcm); err != nil {
		t.Fatal(err)
	}
	return interleavedToneLevels(t, pcm, nch, 48000)[0].dbfs
}
