package main

import (
	"crypto/rand"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haivision/srtgo"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/config"
)

// TestBadInputs feeds every bad input of DESIGN §5 that reaches the core
// path while a viewer keeps playing, and checks each precise answer and that
// the viewer never notices.
func TestBadInputs(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *config.Config) {
		// passthrough: B-frames are refused there (auto would transcode
		// them, transcode_test.go).
		c.Paths = map[string]config.Path{"live/cam1": {MaxReaders: 2}, "live/bframes": {Video: config.VideoPassthrough}}
	})
	startFFmpeg(t, x264Args("640x360"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")
	watcher := dialViewer(t, ts, "live/cam1")
	watcher.waitUnits(t, 10, 15*time.Second)

	t.Run("streamid unparsable", func(t *testing.T) {
		p := startFFmpeg(t, x264Args("320x240", "-t", "5"), ts.srtURL("cam1"))
		if err := p.Wait(t, 20*time.Second); err == nil {
			t.Errorf("ffmpeg with a bad streamid was accepted")
		}
		line := ts.logs.WaitLog(t, 5*time.Second, "rejected", `streamid=cam1`)
		if !strings.Contains(line, "publish:") {
			t.Errorf("rejection does not show the expected syntax: %s", line)
		}
	})
	t.Run("busy path", func(t *testing.T) {
		p := startFFmpeg(t, x264Args("320x240", "-t", "5"), ts.srtURL("publish:live/cam1"))
		if err := p.Wait(t, 20*time.Second); err == nil {
			t.Errorf("second publisher on a busy path was accepted")
		}
		ts.logs.WaitLog(t, 5*time.Second, "rejected", "path=live/cam1", "busy")
	})
	t.Run("no H.264", func(t *testing.T) {
		startFFmpeg(t, []string{"-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-t", "3",
			"-c:v", "mpeg2video"}, ts.srtURL("publish:live/mpeg2"))
		line := ts.logs.WaitLog(t, 20*time.Second, "publisher closed", "path=live/mpeg2")
		if !strings.Contains(line, "H.264") || !strings.Contains(line, "libx264") {
			t.Errorf("no-H.264 close reason does not name the fix: %s", line)
		}
	})
	t.Run("B-frames", func(t *testing.T) {
		args := []string{"-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-t", "4",
			"-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "30"}
		startFFmpeg(t, args, ts.srtURL("publish:live/bframes"))
		line := ts.logs.WaitLog(t, 20*time.Second, "path=live/bframes", "-bf 0")
		t.Logf("B-frame report: %s", line)
	})
	t.Run("garbage TS", func(t *testing.T) {
		sendCorruptedTS(t, ts)
		line := ts.logs.WaitLog(t, 20*time.Second, "path=live/garbage", "decode error")
		t.Logf("decode error summary: %s", line)
	})

	whepURL := ts.httpURL("/live/cam1/whep")
	post := func(contentType string, body io.Reader) *http.Response {
		t.Helper()
		resp, err := http.Post(whepURL, contentType, body)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	t.Run("415 wrong content type", func(t *testing.T) {
		if r := post("text/plain", strings.NewReader("v=0")); r.StatusCode != http.StatusUnsupportedMediaType {
			t.Errorf("status %d, want 415", r.StatusCode)
		}
	})
	t.Run("400 malformed SDP", func(t *testing.T) {
		r := post("application/sdp", strings.NewReader("this is not SDP"))
		b, _ := io.ReadAll(r.Body)
		if r.StatusCode != http.StatusBadRequest || len(b) == 0 {
			t.Errorf("status %d body %q, want 400 with a reason", r.StatusCode, b)
		}
	})
	t.Run("413 oversized offer", func(t *testing.T) {
		big := strings.Repeat("a=x\r\n", 20000)
		if r := post("application/sdp", strings.NewReader("v=0\r\n"+big)); r.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("status %d, want 413", r.StatusCode)
		}
	})
	t.Run("409 no publisher", func(t *testing.T) {
		resp, err := http.Post(ts.httpURL("/live/nobody/whep"), "application/sdp", strings.NewReader(offerSDP(t)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		// draft-ietf-wish-whep-03: the endpoint exists, retry later.
		if resp.StatusCode != http.StatusConflict || resp.Header.Get("Retry-After") == "" ||
			resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("status %d Retry-After %q Content-Type %q, want 409 with Retry-After and a problem",
				resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"))
		}
	})
	t.Run("503 at the reader cap", func(t *testing.T) {
		second := dialViewer(t, ts, "live/cam1") // cap is 2: watcher + this one
		_ = second
		r := post("application/sdp", strings.NewReader(offerSDP(t)))
		if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
			t.Errorf("status %d Retry-After %q, want 503 with Retry-After", r.StatusCode, r.Header.Get("Retry-After"))
		}
	})

	// The viewer that watched through all of it never noticed.
	n := watcher.count()
	watcher.waitUnits(t, n+30, 15*time.Second)
	checkUndisturbed(t, "watcher", watcher)
	if ls := ts.logs.Lines("reader is too slow"); len(ls) > 0 {
		t.Errorf("a viewer dropped frames: %s", ls[0])
	}
}

// sendCorruptedTS pushes a real H.264 + AAC TS over SRT with some messages
// replaced by random bytes, as a lossy or broken encoder would.
func sendCorruptedTS(t *testing.T, ts *testServer) {
	t.Helper()
	data := damagedAACClip(t, "3")
	addr := ts.srt.Addr()
	sock := srtgo.NewSrtSocket(addr.IP.String(), uint16(addr.Port), map[string]string{
		"blocking": "1", "transtype": "live", "streamid": "publish:live/garbage", "mode": "caller"})
	if sock == nil {
		t.Fatal("srtgo socket")
	}
	t.Cleanup(func() { sock.Close() })
	if err := sock.Connect(); err != nil {
		t.Fatalf("SRT connect: %v", err)
	}
	const msg = 1316
	for i := 0; i+msg <= len(data); i += msg {
		chunk := data[i : i+msg]
		if i/msg%25 == 24 {
			chunk = make([]byte, msg)
			rand.Read(chunk)
		}
		if _, err := sock.Write(chunk); err != nil {
			t.Fatalf("SRT write: %v", err)
		}
		// Paced like a live sender (about 1 Mbit/s) so libsrt's receive
		// buffer never overflows: this emulates the sender's clock, it
		// waits for nothing.
		time.Sleep(5 * time.Millisecond)
	}
}

// damagedAACClip makes a seconds-long H.264 + AAC TS with every fourth
// audio frame's header broken (breakADTS) and returns its bytes.
func damagedAACClip(t *testing.T, seconds string) []byte {
	t.Helper()
	file := filepath.Join(t.TempDir(), "clip.ts")
	testkit.FFmpeg(t, "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", seconds,
		"-c:v", "libx264", "-preset", "ultrafast", "-bf", "0", "-g", "30", "-c:a", "aac", "-f", "mpegts", file)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	breakADTS(data)
	return data
}

// breakADTS clears the ADTS sync word of every fourth audio PES in a TS
// (audio on PID 257, as ffmpeg writes it): TS and PES framing stay intact,
// so the demuxer gets the frame and must count it as an audio error.
func breakADTS(ts []byte) {
	n := 0
	for i := 0; i+188 <= len(ts); i += 188 {
		pkt := ts[i : i+188]
		pid := int(pkt[1]&0x1f)<<8 | int(pkt[2])
		if pkt[0] != 0x47 || pid != 257 || pkt[1]&0x40 == 0 {
			continue // not the start of an audio PES
		}
		payload := 4
		if pkt[3]&0x20 != 0 { // adaptation field
			payload += 1 + int(pkt[4])
		}
		adts := payload + 9
		if adts+1 >= len(pkt) || pkt[payload+2] != 1 {
			continue
		}
		adts += int(pkt[payload+8]) // PES header data length
		if n++; n%4 == 0 && adts+1 < len(pkt) {
			pkt[adts], pkt[adts+1] = 0, 0
		}
	}
}
