package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// clips are the MPEG-TS files MakeClip encoded, by their ffmpeg
// arguments; like BuildBinary's binaries they outlive single tests and
// are removed when Main's m.Run returns.
var clips struct {
	mu    sync.Mutex
	dir   string
	files map[string]string
}

// MakeClip encodes ffmpeg input and encoder arguments (no output) into an
// MPEG-TS file once per test binary, and returns its path: a publisher
// that plays it with LoopArgs costs a copy, about 2 % of a core, where
// encoding live costs 5 % (320x240) to 14 % (1280x720) with libx264
// ultrafast, more with filters such as noise. The arguments should bound
// the clip (-frames:v) to whole GOPs, so that every loop starts at an IDR.
// For helpers that have no test to fail; Clip is the one that has.
func MakeClip(args ...string) (string, error) {
	key := strings.Join(args, "\x00")
	clips.mu.Lock()
	defer clips.mu.Unlock()
	if f, ok := clips.files[key]; ok {
		return f, nil
	}
	if clips.dir == "" {
		dir, err := os.MkdirTemp("", "srtwhep-clips-")
		if err != nil {
			return "", err
		}
		clips.dir, clips.files = dir, map[string]string{}
	}
	path, err := exec.LookPath("ffmpeg")
	if err != nil {
		return "", fmt.Errorf("ffmpeg not found: %s", ffmpegHint)
	}
	out := filepath.Join(clips.dir, fmt.Sprintf("%d.ts", len(clips.files)))
	cmd := exec.Command(path, append(append(append([]string{"-y"}, quiet...), args...), "-f", "mpegts", out)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("ffmpeg %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	clips.files[key] = out
	return out, nil
}

// Clip is MakeClip that fails t.
func Clip(t testing.TB, args ...string) string {
	t.Helper()
	f, err := MakeClip(args...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// LoopArgs are ffmpeg's input arguments that play clip in real time, in
// a loop, copied: a live stream until ffmpeg is stopped.
func LoopArgs(clip string) []string {
	return []string{"-re", "-stream_loop", "-1", "-i", clip, "-c", "copy"}
}

// removeClips deletes what MakeClip made, once m.Run has returned.
func removeClips() {
	clips.mu.Lock()
	defer clips.mu.Unlock()
	if clips.dir != "" {
		_ = os.RemoveAll(clips.dir)
	}
	clips.dir, clips.files = "", nil
}
