package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haivision/srtgo"

	"github.com/srtwhep/srtwhep/internal/srtcall"
	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/config"
)

// The SRT read tests play paths with the real ffprobe, the way ffplay,
// VLC or OBS read them, and refuse readers with a raw libsrt caller that
// sees the reject reason.

// probe is what ffprobe read from an SRT URL.
type probe struct {
	Streams []struct {
		Index      int    `json:"index"`
		CodecType  string `json:"codec_type"`
		CodecName  string `json:"codec_name"`
		SampleRate string `json:"sample_rate"`
	} `json:"streams"`
	// With both -show_packets and -show_frames, ffprobe lists them in
	// one array in the order it read them.
	Items []probeItem `json:"packets_and_frames"`
}

type probeItem struct {
	Type        string `json:"type"` // "packet" or "frame"
	StreamIndex int    `json:"stream_index"`
	PTSTime     string `json:"pts_time"`
	MediaType   string `json:"media_type"`
	PictType    string `json:"pict_type"`
	KeyFrame    int    `json:"key_frame"`
}

// probeSRT runs a real ffprobe on an SRT read for seconds of stream time,
// listing streams, packets and decoded frames. streamid goes in the
// -streamid option, which takes the access-control form's '#' that an
// srt:// URL cannot carry.
func probeSRT(t *testing.T, ts *testServer, streamid string, seconds int) probe {
	t.Helper()
	return startProbe(t, ts, streamid, seconds)()
}

// startProbe is probeSRT in the background: the returned func waits for
// ffprobe and returns what it read. Call it from the test's goroutine.
func startProbe(t *testing.T, ts *testServer, streamid string, seconds int) func() probe {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Duration(seconds+30)*time.Second)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-streamid", streamid,
		"-read_intervals", fmt.Sprintf("%%+%d", seconds), "-show_streams", "-show_packets", "-show_frames",
		"-of", "json", "srt://"+ts.srt.Addr().String())
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("ffprobe: %v (apt-get install -y ffmpeg)", err)
	}
	return func() probe {
		t.Helper()
		defer cancel()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("ffprobe %s: %v\n%s", streamid, err, stderr.String())
		}
		var p probe
		if err := json.Unmarshal(stdout.Bytes(), &p); err != nil {
			t.Fatalf("ffprobe output: %v\n%.500s", err, stdout.String())
		}
		return p
	}
}

// streams lists "type:codec@rate" in index order.
func (p probe) streams() []string {
	var out []string
	for _, s := range p.Streams {
		d := s.CodecType + ":" + s.CodecName
		if s.SampleRate != "" {
			d += "@" + s.SampleRate
		}
		out = append(out, d)
	}
	return out
}

func (p probe) index(kind, codec string) int {
	for _, s := range p.Streams {
		if s.CodecType == kind && (codec == "" || s.CodecName == codec) {
			return s.Index
		}
	}
	return -1
}

// pts lists a stream's packet timestamps in seconds.
func (p probe) pts(index int) []float64 {
	var out []float64
	for _, pk := range p.Items {
		if v, err := strconv.ParseFloat(pk.PTSTime, 64); err == nil && pk.Type == "packet" && pk.StreamIndex == index {
			out = append(out, v)
		}
	}
	return out
}

// rate is packets per second over a stream's PTS span.
func rate(pts []float64) float64 {
	if len(pts) < 2 || pts[len(pts)-1] <= pts[0] {
		return 0
	}
	return float64(len(pts)-1) / (pts[len(pts)-1] - pts[0])
}

// withTone is the reference video (x264Args' encoder at 320x240) with a
// 1 kHz tone encoded as audio says.
func withTone(audio ...string) []string {
	args := []string{"-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
		"-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000",
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-bf", "0", "-g", "60", "-b:v", "1000k"}
	return append(args, audio...)
}

// TestSRTRead: ffprobe reads a path over SRT, in either streamid form, and
// sees the H.264 at the published 30 fps from an IDR, and the audio as it
// was published (AAC stays AAC, MP2 stays MP2) at its own frame rate.
func TestSRTRead(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	cases := []struct {
		path, streamid, codec string
		unitsPerSecond        float64
		args                  []string
	}{
		{"live/aac", "read:live/aac", "aac", 48000.0 / 1024, []string{"-c:a", "aac", "-ar", "48000", "-b:a", "128k"}},
		{"live/mp2", "#!::r=live/mp2,m=request", "mp2", 48000.0 / 1152, []string{"-c:a", "mp2", "-ar", "48000"}},
	}
	for _, tc := range cases {
		startFFmpeg(t, withTone(tc.args...), ts.srtURL("publish:"+tc.path))
	}
	for _, tc := range cases {
		t.Run(tc.codec, func(t *testing.T) {
			// Each case reads its own path for 5 s: both at once.
			t.Parallel()
			ts.waitPublisher(t, tc.path)
			p := probeSRT(t, ts, tc.streamid, 5)
			vi, ai := p.index("video", ""), p.index("audio", "")
			video, audio := p.pts(vi), p.pts(ai)
			fps, ups := rate(video), rate(audio)
			t.Logf("%s: streams %v; video %.2f fps over %d packets, audio %.2f units/s over %d", tc.path, p.streams(), fps, len(video), ups, len(audio))
			if want := []string{"video:h264", "audio:" + tc.codec + "@48000"}; !slices.Equal(p.streams(), want) {
				t.Errorf("streams %v, want %v", p.streams(), want)
			}
			if fps < 30*0.95 || fps > 30*1.05 || len(video) < 100 {
				t.Errorf("video at %.2f fps over %d packets, want 30 within 5 %% over about 5 s", fps, len(video))
			}
			if ups < tc.unitsPerSecond*0.95 || ups > tc.unitsPerSecond*1.05 {
				t.Errorf("audio at %.2f units/s, want %.2f within 5 %%", ups, tc.unitsPerSecond)
			}
			i := slices.IndexFunc(p.Items, func(f probeItem) bool { return f.Type == "frame" && f.MediaType == "video" })
			if i < 0 || p.Items[i].KeyFrame != 1 || p.Items[i].PictType != "I" {
				t.Errorf("first decoded picture %+v, want an IDR", p.Items[max(i, 0):min(max(i, 0)+1, len(p.Items))])
			}
			line := ts.logs.WaitLog(t, 10*time.Second, "reader closed", "path="+tc.path, "protocol=srt")
			session := logAttr(line, "session")
			ts.logs.WaitLog(t, time.Second, "reader opened", "path="+tc.path, "session="+session, "remote=127.0.0.1:", "protocol=srt")
		})
	}
}

// logAttr is a key's value in a text log line.
func logAttr(line, key string) string {
	for f := range strings.FieldsSeq(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

// srtReject dials streamid and returns the reject reason, failing the
// test when the read is admitted.
func srtReject(t *testing.T, ts *testServer, streamid string) int {
	t.Helper()
	sock, err := srtcall.Dial(ts.srt.Addr(), srtcall.Options{StreamID: streamid})
	if err == nil {
		srtcall.Close(sock)
		t.Fatalf("read with streamid %q was admitted", streamid)
	}
	var rej *srtcall.RejectedError
	if !errors.As(err, &rej) {
		t.Fatalf("read with streamid %q: %v, want a rejection", streamid, err)
	}
	return rej.Reason
}

// srtRead connects a reader and waits for its first SRT message.
func srtRead(t *testing.T, ts *testServer, streamid string) *srtgo.SrtSocket {
	t.Helper()
	sock, err := srtcall.Dial(ts.srt.Addr(), srtcall.Options{StreamID: streamid, ReadTimeout: 15 * time.Second})
	if err != nil {
		t.Fatalf("read with streamid %q: %v", streamid, err)
	}
	t.Cleanup(func() { srtcall.Close(sock) })
	buf := make([]byte, 1500)
	if n, err := sock.Read(buf); err != nil || n == 0 || buf[0] != 0x47 {
		t.Fatalf("first message of %q: %d bytes, %v", streamid, n, err)
	}
	return sock
}

// TestSRTReadRefused: a read is refused in the SRT handshake with the
// reason that says why: no publisher, a bad token where readTokens are
// set, a path whose maxReaders is taken by SRT readers and WHEP viewers
// alike.
func TestSRTReadRefused(t *testing.T) {
	t.Parallel()
	ts := startServer(t, func(c *config.Config) {
		c.Paths = map[string]config.Path{
			"live/locked": {ReadTokens: []string{"opensesame"}},
			"live/one":    {MaxReaders: 1},
		}
	})
	startFFmpeg(t, x264Args("320x240"), ts.srtURL("publish:live/locked"))
	startFFmpeg(t, x264Args("320x240"), ts.srtURL("publish:live/one"))
	ts.waitPublisher(t, "live/locked")
	ts.waitPublisher(t, "live/one")

	if r := srtReject(t, ts, "read:live/none"); r != srtgo.RejectionReasonNotFound {
		t.Errorf("no publisher: reject reason %d, want %d (not found)", r, srtgo.RejectionReasonNotFound)
	}
	ts.logs.WaitLog(t, 5*time.Second, "srt reader rejected", "path=live/none", "not found (1404)")

	if r := srtReject(t, ts, "read:live/locked:viewer:guess"); r != srtgo.RejectionReasonUnauthorized {
		t.Errorf("bad token: reject reason %d, want %d (unauthorized)", r, srtgo.RejectionReasonUnauthorized)
	}
	ts.logs.WaitLog(t, 5*time.Second, "srt reader rejected", "path=live/locked", "unauthorized (1401)")
	// The right token plays once the failure's penalty (100 ms) is over.
	testkit.WaitFor(t, 10*time.Second, "a read with the right token", func() bool {
		sock, err := srtcall.Dial(ts.srt.Addr(), srtcall.Options{StreamID: "#!::r=live/locked,m=request,s=opensesame", ReadTimeout: 15 * time.Second})
		if err != nil {
			return false
		}
		defer srtcall.Close(sock)
		buf := make([]byte, 1500)
		n, err := sock.Read(buf)
		return err == nil && n > 0
	})

	// A WHEP viewer holds live/one's only slot: the SRT reader is refused
	// as over the limit.
	v := dialViewer(t, ts, "live/one")
	if r := srtReject(t, ts, "read:live/one"); r != srtgo.RejectionReasonOverload {
		t.Errorf("full path: reject reason %d, want %d (overload)", r, srtgo.RejectionReasonOverload)
	}
	ts.logs.WaitLog(t, 5*time.Second, "srt reader rejected", "path=live/one", "path reader limit reached")
	// And the other way round: an SRT reader holds it, a WHEP POST gets 503.
	v.Close()
	testkit.WaitFor(t, 10*time.Second, "the viewer's slot freed", func() bool { return pathReaders(ts, "live/one") == 0 })
	srtRead(t, ts, "read:live/one")
	if n := pathReaders(ts, "live/one"); n != 1 {
		t.Fatalf("%d readers on live/one with one SRT reader", n)
	}
	if r := srtReject(t, ts, "read:live/one"); r != srtgo.RejectionReasonOverload {
		t.Errorf("second SRT reader of a full path: reject reason %d, want %d (overload)", r, srtgo.RejectionReasonOverload)
	}
	code, _, body := request(t, http.MethodPost, ts.httpURL("/live/one/whep"), "", "application/sdp", offerSDP(t))
	if code != http.StatusServiceUnavailable {
		t.Errorf("WHEP POST with the SRT reader holding the slot: %d %s, want 503", code, body)
	}
}

func pathReaders(ts *testServer, path string) int {
	for _, p := range ts.hub.Paths() {
		if p.Name == path {
			return p.Readers
		}
	}
	return 0
}

// TestSRTReadSlowReader: an SRT reader that stops reading (a real libsrt
// caller with a receive buffer of 32 packets that it never empties) loses
// video to the next IDR and says so in the log, while a WHEP viewer of the
// same path keeps full rate.
func TestSRTReadSlowReader(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	startFFmpeg(t, x264Args("640x360"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")
	watcher := dialViewer(t, ts, "live/cam1")
	watcher.waitUnits(t, 30, 15*time.Second)

	sock, err := srtcall.Dial(ts.srt.Addr(), srtcall.Options{StreamID: "read:live/cam1", RcvBuf: 48 << 10})
	if err != nil {
		t.Fatalf("stalled reader: %v", err)
	}
	t.Cleanup(func() { srtcall.Close(sock) })
	opened := ts.logs.WaitLog(t, 10*time.Second, "reader opened", "path=live/cam1", "protocol=srt")
	session := logAttr(opened, "session")
	ts.logs.WaitLog(t, 30*time.Second, "reader is too slow", "path=live/cam1", "session="+session)

	start := watcher.count()
	watcher.waitUnits(t, start+90, 15*time.Second)
	checkFullRate(t, "WHEP viewer next to the stalled SRT reader", watcher)
	if lines := ts.logs.Lines("reader is too slow", "session="+sessionID(watcher)); len(lines) != 0 {
		t.Errorf("the WHEP viewer dropped frames: %v", lines)
	}
}

// TestSRTReadAcrossPublishers: a reader kept through a publisher change
// (within publisherGrace) plays on in the same TS: the pictures' timestamps
// keep increasing, the new publisher's audio codec appears, and the log
// says the reader continued.
func TestSRTReadAcrossPublishers(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	startFFmpeg(t, append(withTone("-c:a", "aac", "-ar", "48000"), "-t", "5"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")
	wait := startProbe(t, ts, "read:live/cam1", 9)
	// The second publisher starts when the first has gone.
	ts.logs.WaitLog(t, 30*time.Second, "publisher closed", "path=live/cam1")
	startFFmpeg(t, append(withTone("-c:a", "mp2", "-ar", "48000"), "-t", "10"), ts.srtURL("publish:live/cam1"))
	p := wait()
	vi := p.index("video", "h264")
	video := p.pts(vi)
	t.Logf("streams %v, %d pictures", p.streams(), len(video))
	for i := 1; i < len(video); i++ {
		if video[i] <= video[i-1] {
			t.Fatalf("picture %d at %.3f s after %.3f s", i, video[i], video[i-1])
		}
	}
	if p.index("audio", "aac") < 0 || p.index("audio", "mp2") < 0 {
		t.Errorf("streams %v, want both publishers' audio (aac, then mp2)", p.streams())
	}
	if len(p.pts(p.index("audio", "mp2"))) < 20 {
		t.Errorf("only %d MP2 packets from the second publisher", len(p.pts(p.index("audio", "mp2"))))
	}
	ts.logs.WaitLog(t, 5*time.Second, "reader continues with a new publisher", "path=live/cam1", "protocol=srt")
	ts.logs.WaitLog(t, 5*time.Second, "reader's program changes", `audio="MPEG-1 Audio"`)
}
