package glass

import (
	"bytes"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestStampRoundTrip(t *testing.T) {
	const w, h = 640, 360
	y := make([]byte, w*h)
	want := Stamp{Created: time.UnixMicro(1_764_581_234_567_890), Seq: 65535}
	want.Draw(y, w)
	got, ok := Read(y, w)
	if !ok || !got.Created.Equal(want.Created) || got.Seq != want.Seq {
		t.Fatalf("Read = %+v, %v; want %+v", got, ok, want)
	}
	// One flipped block fails the check instead of reading a wrong time.
	for i := range Block {
		row := y[(Block+i)*w+3*Block : (Block+i)*w+4*Block]
		for k := range row {
			row[k] = 255 - row[k]
		}
	}
	if got, ok := Read(y, w); ok {
		t.Errorf("damaged stamp read as %+v", got)
	}
	if _, ok := Read(y[:w*Block], w); ok {
		t.Error("a plane too short for the stamp was read")
	}
}

// TestStampSurvivesX264: the method only works if stamps come back
// exactly through the encoder and decoder the measurement uses, at a low
// bitrate and with motion around them.
func TestStampSurvivesX264(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Fatal("ffmpeg not found: run `make test` (it installs it) or `apt-get install -y ffmpeg`")
	}
	const w, h, n = 320, 240, 30
	var raw bytes.Buffer
	frame := make([]byte, w*h*3/2)
	base := time.UnixMicro(1_764_581_234_000_000)
	for i := range n {
		for p := range frame {
			frame[p] = byte(p*7 + i*13) // noise: the worst neighbour a block can have
		}
		Stamp{Created: base.Add(time.Duration(i) * 33 * time.Millisecond), Seq: uint16(i)}.Draw(frame, w)
		raw.Write(frame)
	}
	enc := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "yuv420p",
		"-s", fmt.Sprintf("%dx%d", w, h), "-r", "30", "-i", "pipe:0", "-c:v", "libx264", "-preset", "ultrafast",
		"-tune", "zerolatency", "-bf", "0", "-b:v", "300k", "-f", "h264", "pipe:1")
	enc.Stdin = &raw
	h264, err := enc.Output()
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	dec := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "h264", "-i", "pipe:0",
		"-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "gray", "pipe:1")
	dec.Stdin = bytes.NewReader(h264)
	gray, err := dec.Output()
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if len(gray) != n*w*h {
		t.Fatalf("decoded %d bytes, want %d pictures", len(gray), n)
	}
	for i := range n {
		st, ok := Read(gray[i*w*h:(i+1)*w*h], w)
		want := base.Add(time.Duration(i) * 33 * time.Millisecond)
		if !ok || st.Seq != uint16(i) || !st.Created.Equal(want) {
			t.Errorf("picture %d: stamp %+v, %v; want seq %d at %v", i, st, ok, i, want)
		}
	}
}

func TestQuantile(t *testing.T) {
	var s []time.Duration
	for i := 100; i >= 1; i-- {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	if q := Quantile(s, 0.5); q != 50*time.Millisecond {
		t.Errorf("median %v", q)
	}
	if q := Quantile(s, 0.95); q != 95*time.Millisecond {
		t.Errorf("p95 %v", q)
	}
	if s[0] != 100*time.Millisecond {
		t.Error("Quantile sorted its input")
	}
}

func TestBuckets(t *testing.T) {
	text := `# TYPE srtwhep_server_latency_seconds histogram
srtwhep_server_latency_seconds_bucket{le="0.001"} 50
srtwhep_server_latency_seconds_bucket{le="0.002"} 90
srtwhep_server_latency_seconds_bucket{le="+Inf"} 100
srtwhep_server_latency_seconds_sum 0.1
srtwhep_server_latency_seconds_count 100
`
	b, err := ParseBuckets(strings.NewReader(text), "srtwhep_server_latency_seconds")
	if err != nil {
		t.Fatal(err)
	}
	if b.Count() != 100 || b[math.Inf(1)] != 100 {
		t.Fatalf("buckets %v", b)
	}
	d := b.Sub(Buckets{0.001: 10, 0.002: 10, math.Inf(1): 10})
	if d.Count() != 90 {
		t.Errorf("difference %v", d)
	}
	if q := b.Quantile(0.5); q != time.Millisecond {
		t.Errorf("median %v, want 1ms", q)
	}
	if q := b.Quantile(0.7); q != 1500*time.Microsecond {
		t.Errorf("p70 %v, want 1.5ms", q)
	}
	if q := b.Quantile(0.99); q != 2*time.Millisecond {
		t.Errorf("p99 %v, want the last finite bound", q)
	}
	if _, err := ParseBuckets(strings.NewReader("x 1\n"), "srtwhep_server_latency_seconds"); err == nil {
		t.Error("no buckets parsed without an error")
	}
}
