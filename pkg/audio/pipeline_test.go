package audio

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/tsdemux"
)

// ffmpegTS writes a clip of a 1 kHz sine and 30 fps H.264 (GOP 30, no
// B-frames) with ffmpeg and returns its bytes; sineRate is the tone's
// sample rate and audioArgs are the audio encoding options.
func ffmpegTS(t testing.TB, seconds int, sineRate int, audioArgs ...string) []byte {
	t.Helper()
	bin, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Fatalf("ffmpeg not found (%v): install it with apt-get install -y ffmpeg (make test does)", err)
	}
	out := filepath.Join(t.TempDir(), "clip.ts")
	args := []string{"-hide_banner", "-loglevel", "error", "-y",
		"-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=" + itoa(sineRate),
		"-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
		"-t", itoa(seconds), "-map", "1:v", "-map", "0:a",
		"-c:v", "libx264", "-preset", "ultrafast", "-bf", "0", "-g", "30", "-b:v", "150k"}
	args = append(args, audioArgs...)
	args = append(args, "-f", "mpegts", out)
	if msg, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func itoa(n int) string { return strconv.Itoa(n) }

// pipeline is what ingest will wire: tsdemux's audio hooks feeding a
// Transcoder, built when the track is described.
type pipeline struct {
	video   int
	units   []av.AudioUnit
	tracks  []av.AudioTrack
	frames  []*av.AudioFrame
	demux   tsdemux.Stats
	trans   Stats
	logs    bytes.Buffer
	newErrs []error
}

func runPipeline(t testing.TB, ts []byte, cfg Config) *pipeline {
	t.Helper()
	p := &pipeline{}
	log := slog.New(slog.NewTextHandler(&p.logs, &slog.HandlerOptions{Level: slog.LevelInfo})).With("path", "live/test")
	cfg.Logger = log
	var tr *Transcoder
	closeTr := func() {
		if tr != nil {
			s := tr.Stats()
			p.trans.FramesIn += s.FramesIn
			p.trans.FramesOut += s.FramesOut
			p.trans.Errors += s.Errors
			p.trans.CPU += s.CPU
			tr.Close()
			tr = nil
		}
	}
	d := tsdemux.New(bytes.NewReader(ts), tsdemux.Config{
		Logger: log,
		OnAudioTrack: func(at av.AudioTrack) {
			p.tracks = append(p.tracks, at)
			closeTr()
			var err error
			tr, err = New(at, cfg, func(f *av.AudioFrame) { p.frames = append(p.frames, f) })
			if err != nil {
				p.newErrs = append(p.newErrs, err)
			}
		},
		OnAudio: func(u av.AudioUnit) {
			p.units = append(p.units, u)
			if tr != nil {
				tr.Write(u)
			}
		},
	})
	err := d.Run(context.Background(), func(*av.AccessUnit) error {
		p.video++
		return nil
	})
	if err != nil {
		t.Fatalf("demux: %v", err)
	}
	closeTr()
	p.demux = d.Stats()
	if len(p.newErrs) > 0 {
		t.Fatalf("New: %v", p.newErrs)
	}
	return p
}

// warnings returns the WARN lines logged.
func (p *pipeline) warnings() []string {
	var w []string
	for _, l := range strings.Split(p.logs.String(), "\n") {
		if strings.Contains(l, "level=WARN") {
			w = append(w, l)
		}
	}
	return w
}
