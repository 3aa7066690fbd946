package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h265"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// encoderRow is one publisher as people run it. start launches it
// publishing to url (an SRT caller URL with the streamid set) and returns
// the exact command lines, for the table; OBS cannot run here, so its rows
// are libx264 with the settings OBS passes to x264.
type encoderRow struct {
	name, note string
	tool       string // must be on PATH, else the row is skipped with the fix
	start      func(t *testing.T, ts *testServer, url string) []string
	// after, when set, checks more once the viewer is done and returns
	// notes for the table.
	after func(t *testing.T, ts *testServer, path string) []string
	// viewerH265: the viewer offers H.265 besides H.264, so an H.265
	// publisher can pass through instead of reaching it transcoded.
	viewerH265 bool
}

// encoderResult is what a new viewer saw, as the matrix's table reports it.
type encoderResult struct {
	status      string // 201, or the refusal's status and problem type
	first       time.Duration
	fps         float64
	received    string
	decoded     string
	transcoded  string
	audio       string
	notes       []string
	commandLine []string
}

// The matrix's picture: small enough that a shared 2-core machine runs
// publisher, server and transcoder in real time; ENCODERS_SIZE=1280x720
// for OBS's default output.
func encoderSize() (string, string, string) {
	size := os.Getenv("ENCODERS_SIZE")
	if size == "" {
		size = "640x360"
	}
	w, h, _ := strings.Cut(size, "x")
	return size, w, h
}

const (
	// testsrc2 offers RGB, which libx264 would encode as 4:4:4; a camera
	// or an mp4 file gives 4:2:0, which the format filter stands for.
	ffTone = "sine=frequency=440:sample_rate=48000"
	// OBS's CBR: bitrate, VBV max rate and buffer all at the bitrate.
	obsCBR = "-b:v 2500k -maxrate 2500k -bufsize 2500k"
	obsAAC = "-c:a aac -b:a 160k -ac 2"
)

// ffmpegInput: INPUT, the test picture and tone in real time, then the
// row's settings.
func ffmpegInput(settings string) []string {
	size, _, _ := encoderSize()
	return append([]string{"-re", "-f", "lavfi", "-i", "testsrc2=size=" + size + ":rate=30,format=yuv420p",
		"-f", "lavfi", "-i", ffTone}, strings.Fields(settings)...)
}

// readmeFFmpeg is the README's ffmpeg command with AAC.
const readmeFFmpeg = "-c:v libx264 -preset veryfast -tune zerolatency -bf 0 -g 60 -b:v 2500k -c:a aac -b:a 128k"

func ffmpegRow(name, note, settings string) encoderRow {
	return encoderRow{name: name, note: note, tool: "ffmpeg", start: func(t *testing.T, _ *testServer, url string) []string {
		startFFmpeg(t, ffmpegInput(settings), url)
		return []string{"ffmpeg -re -i INPUT " + settings + " -f mpegts 'srt://HOST:8890?streamid=publish:PATH'"}
	}}
}

// gstRow runs gst-launch-1.0 with video (the branch up to the muxer) and
// audio (the branch into the muxer named m, or "" for none).
func gstRow(name, note, video, mux, audio string) encoderRow {
	return encoderRow{name: name, note: note, tool: "gst-launch-1.0", start: func(t *testing.T, _ *testServer, url string) []string {
		_, w, h := encoderSize()
		url = strings.TrimSuffix(url, "&pkt_size=1316") // srtsink sends 1316-byte payloads itself
		video = strings.NewReplacer("WIDTH", w, "HEIGHT", h).Replace(video)
		pipeline := video + " ! " + mux + " ! srtsink uri=\"" + url + "\""
		if audio != "" {
			pipeline += " " + audio + " ! m."
		}
		// gst-launch-1.0 joins its arguments and parses them as one
		// pipeline description, quotes included.
		cmd := exec.Command("gst-launch-1.0", append([]string{"-q"}, strings.Fields(pipeline)...)...)
		testkit.StartProcess(t, "gst-launch-1.0", cmd)
		return []string{"gst-launch-1.0 " + strings.Replace(pipeline, url, "srt://HOST:8890?streamid=publish:PATH", 1)}
	}}
}

const (
	gstVideo    = "videotestsrc is-live=true ! video/x-raw,width=WIDTH,height=HEIGHT,framerate=30/1,format=I420 ! x264enc tune=zerolatency key-int-max=60 bitrate=2500 ! video/x-h264,profile=baseline ! h264parse"
	gstMux      = "mpegtsmux name=m alignment=7"
	gstAACav    = "audiotestsrc is-live=true ! audioconvert ! avenc_aac ! aacparse"
	gstAACvo    = "audiotestsrc is-live=true ! audioconvert ! voaacenc ! aacparse"
	gstMP2      = "audiotestsrc is-live=true ! audioconvert ! avenc_mp2 ! mpegaudioparse"
	gstOpus     = "audiotestsrc is-live=true ! audioconvert ! audioresample ! opusenc ! opusparse"
	gstBframes  = "videotestsrc is-live=true ! video/x-raw,width=WIDTH,height=HEIGHT,framerate=30/1,format=I420 ! x264enc tune=zerolatency key-int-max=60 bitrate=2500 bframes=2 ! video/x-h264,profile=main ! h264parse"
	gstNoFormat = "videotestsrc is-live=true ! video/x-raw,width=WIDTH,height=HEIGHT,framerate=30/1 ! x264enc tune=zerolatency key-int-max=60 bitrate=2500 ! h264parse"
	gstH265     = "videotestsrc is-live=true ! video/x-raw,width=WIDTH,height=HEIGHT,framerate=30/1,format=I420 ! x265enc tune=zerolatency key-int-max=60 bitrate=2500 ! h265parse"
)

// srtRelayRow: ffmpeg with the README's settings into UDP, relayed by
// srt-live-transmit, as a contribution link does.
var srtRelayRow = encoderRow{
	name: "srt-live-transmit 1.5 relaying ffmpeg (README settings)", tool: "srt-live-transmit",
	start: func(t *testing.T, _ *testServer, url string) []string {
		url = strings.TrimSuffix(url, "&pkt_size=1316") // not an srt-live-transmit option
		port := freeUDPPort(t)
		src := fmt.Sprintf("udp://127.0.0.1:%d", port)
		testkit.StartProcess(t, "srt-live-transmit", exec.Command("srt-live-transmit", "-q", src, url))
		settings := readmeFFmpeg
		startFFmpeg(t, ffmpegInput(settings), src+"?pkt_size=1316")
		return []string{
			fmt.Sprintf("srt-live-transmit %s 'srt://HOST:8890?streamid=publish:PATH'", src),
			fmt.Sprintf("ffmpeg -re -i INPUT %s -f mpegts 'udp://127.0.0.1:%d?pkt_size=1316'", settings, port),
		}
	},
	after: srtReadOut,
}

// srtReadOut reads the path back out with srt-live-transmit (read:PATH)
// until 256 KiB or 15 s, and names the streams ffprobe finds in it.
func srtReadOut(t *testing.T, ts *testServer, path string) []string {
	file := filepath.Join(t.TempDir(), "read.ts")
	out, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	url := fmt.Sprintf("srt://%s?streamid=read:%s", ts.srt.Addr(), path)
	cmd := exec.Command("srt-live-transmit", "-q", url, "file://con")
	cmd.Stdout = out
	if err := cmd.Start(); err != nil {
		return []string{"read out: " + err.Error()}
	}
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if fi, err := out.Stat(); err == nil && fi.Size() >= 256<<10 {
			break
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	fi, _ := out.Stat()
	probe, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", file).Output()
	if err != nil {
		return []string{fmt.Sprintf("read out with `srt-live-transmit 'srt://HOST:8890?streamid=read:PATH' file://con`: %d bytes, ffprobe: %v", fi.Size(), err)}
	}
	// ffprobe names a stream once per program it belongs to.
	var codecs []string
	for _, c := range strings.Fields(string(probe)) {
		if !slices.Contains(codecs, c) {
			codecs = append(codecs, c)
		}
	}
	return []string{fmt.Sprintf("read out with `srt-live-transmit 'srt://HOST:8890?streamid=read:PATH' file://con`: %d KiB, streams %s", fi.Size()>>10, strings.Join(codecs, ", "))}
}

func encoderRows() []encoderRow {
	obsSimple := "-c:v libx264 -preset veryfast -profile:v high -bf 2 -g 250 -r 30 " + obsCBR + " " + obsAAC
	return []encoderRow{
		ffmpegRow("ffmpeg, README settings", "", readmeFFmpeg),
		ffmpegRow("ffmpeg defaults", "x264 defaults: 3 B-frames, keyint 250; MP2 audio", "-c:v libx264"),
		ffmpegRow("OBS 29 Simple mode (emulated)", "libx264 as OBS sets it: veryfast, high, bframes 2, keyint 250, CBR 2500k, AAC 160k", obsSimple),
		ffmpegRow("OBS 29 Advanced, x264 options empty (emulated)", "as Simple: Keyframe Interval 0 (auto) = x264's 250", obsSimple),
		ffmpegRow("OBS 29 Advanced, `bframes=0 keyint=60` (emulated)", "", "-c:v libx264 -preset veryfast -profile:v high -x264-params bframes=0:keyint=60 -r 30 "+obsCBR+" "+obsAAC),
		gstRow("GStreamer 1.22, avenc_aac", "", gstVideo, gstMux, gstAACav),
		gstRow("GStreamer 1.22, voaacenc", "", gstVideo, gstMux, gstAACvo),
		gstRow("GStreamer 1.22, avenc_mp2", "", gstVideo, gstMux, gstMP2),
		gstRow("GStreamer 1.22, opusenc", "", gstVideo, gstMux, gstOpus),
		gstRow("GStreamer 1.22, x264enc bframes=2", "profile=main (baseline has no B-frames)", gstBframes, gstMux, gstAACav),
		gstRow("GStreamer 1.22, without alignment=7", "", gstVideo, "mpegtsmux name=m", gstAACav),
		gstRow("GStreamer 1.22, without format=I420", "no profile caps either: x264enc picks its input format", gstNoFormat, gstMux, gstAACav),
		srtRelayRow,
		ffmpegRow("ffmpeg H.265", "", ffmpegH265),
		gstRow("GStreamer 1.22, x265enc", "", gstH265, gstMux, gstAACav),
		offersH265(ffmpegRow("ffmpeg H.265, viewer offers H.265", "", ffmpegH265)),
		offersH265(gstRow("GStreamer 1.22, x265enc, viewer offers H.265", "", gstH265, gstMux, gstAACav)),
	}
}

const ffmpegH265 = "-c:v libx265 -preset ultrafast -bf 0 -g 60 -b:v 2500k -c:a aac -b:a 128k"

// offersH265: the row's publisher played by a viewer whose offer has
// H265/90000 as well, as Safari's and recent Chrome's do.
func offersH265(r encoderRow) encoderRow {
	r.viewerH265 = true
	return r
}

// TestEncoders is the publisher matrix: each publisher people use, with
// the settings they start with and those the README gives, pushes over SRT
// to the real server (default config) and a real pion viewer (H.264 and
// Opus offered; for the H.265 publishers also one offering H.265) plays it. It is a report, run by scripts/bench.sh, not a
// gate: ENCODERS=1 runs it, ENCODERS_OUT=FILE writes the markdown table.
// It fails only when the README's own settings do not play.
func TestEncoders(t *testing.T) {
	if os.Getenv("ENCODERS") != "1" {
		t.Skip("the publisher matrix runs with ENCODERS=1 (scripts/bench.sh)")
	}
	ts := startServer(t, nil)
	var table []string
	size, _, _ := encoderSize()
	table = append(table,
		fmt.Sprintf("Publishers at %s 30 fps against srtwhep's default config (`video: auto`), %s; a pion viewer offering H.264 and Opus (and H.265 where the row says so) joins once the publisher has sent 3 s; fps and audio packets are counted from 3 s to 8 s after its first picture; all its pictures are decoded by ffprobe.", size, time.Now().UTC().Format("2006-01-02 15:04 UTC")),
		"",
		"| publisher | WHEP | POST → first picture | fps (5 s) | video received | decoded | transcoded | audio | notes |",
		"| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	var commands []string
	for i, row := range encoderRows() {
		path := fmt.Sprintf("live/enc%d", i)
		r := encoderResult{status: "not run (-run)"}
		t.Run(row.name, func(t *testing.T) {
			if _, err := exec.LookPath(row.tool); err != nil {
				r = encoderResult{status: "not run", notes: []string{row.tool + " not installed (scripts/deps.sh bench)"}}
				return
			}
			r = runEncoderRow(t, ts, row, path)
			t.Logf("%+v", r)
			if i == 0 && (r.status != "201" || r.fps < 20) {
				t.Errorf("the README's ffmpeg settings do not play: %+v", r)
			}
		})
		if row.note != "" {
			r.notes = append([]string{row.note}, r.notes...)
		}
		table = append(table, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s | %s |", row.name, r.status,
			durationCell(r.first), fpsCell(r.fps), dash(r.received), dash(r.decoded), dash(r.transcoded), dash(r.audio),
			strings.ReplaceAll(strings.Join(r.notes, "; "), "|", "\\|")))
		for _, c := range r.commandLine {
			commands = append(commands, fmt.Sprintf("- %s: `%s`", row.name, c))
		}
	}
	out := strings.Join(table, "\n") + "\n\nCommands as run (INPUT: lavfi testsrc2 at the size above, format=yuv420p, and a 440 Hz sine at 48 kHz):\n\n" + strings.Join(commands, "\n") + "\n"
	t.Logf("publisher matrix:\n%s", out)
	if file := os.Getenv("ENCODERS_OUT"); file != "" {
		if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
			t.Errorf("write %s: %v", file, err)
		}
	}
}

func runEncoderRow(t *testing.T, ts *testServer, row encoderRow, path string) encoderResult {
	r := measureEncoder(t, ts, row, path)
	if row.after != nil {
		r.notes = append(r.notes, row.after(t, ts, path)...)
	}
	r.notes = append(r.notes, serverWarnings(ts, path)...)
	return r
}

func measureEncoder(t *testing.T, ts *testServer, row encoderRow, path string) encoderResult {
	var r encoderResult
	r.commandLine = row.start(t, ts, ts.srtURL("publish:"+path))
	// A viewer joins a running stream: 3 s of pictures in, or whatever
	// the server made of it after 20 s (a refused publisher has none).
	deadline := time.Now().Add(20 * time.Second)
	for ts.framesIn(path) < 90 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if n := ts.framesIn(path); n < 90 {
		r.notes = append(r.notes, fmt.Sprintf("%d pictures reached the hub in 20 s", n))
	}
	posted := time.Now()
	v, err := connectViewer(ts, path, func(o *whepclient.Options) { o.Audio, o.H265 = true, row.viewerH265 })
	if err != nil {
		var he *whepclient.HTTPError
		if errors.As(err, &he) {
			r.status = fmt.Sprint(he.StatusCode)
			var p struct{ Type, Detail string }
			if json.Unmarshal([]byte(he.Body), &p) == nil {
				r.status += " " + p.Type
				r.notes = append(r.notes, "detail: "+p.Detail)
			}
		} else {
			r.status = "error"
			r.notes = append(r.notes, err.Error())
		}
		return r
	}
	defer v.Close()
	r.status = "201"
	// The first picture, then 3 s for the cached GOP's burst (and any
	// catching up behind it) to pass, and 5 s of live pictures (bounded:
	// a stalled stream ends the wait).
	var first time.Time
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if aus := v.units(); len(aus) > 0 {
			first = aus[0].Received
			break
		}
	}
	if first.IsZero() {
		r.notes = append(r.notes, "no picture within 20 s of the POST")
		return r
	}
	r.first = first.Sub(posted)
	from, to := first.Add(3*time.Second), first.Add(8*time.Second)
	for time.Now().Before(to.Add(500 * time.Millisecond)) {
		time.Sleep(100 * time.Millisecond)
	}
	aus, audio := v.snapshot()
	var n int
	for _, au := range aus {
		if !au.Received.Before(from) && au.Received.Before(to) {
			n++
		}
	}
	r.fps = float64(n) / to.Sub(from).Seconds()
	var frames int
	var dims string
	if len(aus) > 0 && aus[0].H265 {
		r.received = h265Profile(aus)
		frames, dims = decodeAnnexB(t, aus, "hevc")
	} else {
		r.received = h264Profile(aus)
		frames, dims = decodeH264(t, aus)
	}
	r.decoded = fmt.Sprintf("%d/%d at %s", frames, len(aus), strings.Replace(dims, ",", "x", 1))
	if st, ok := ingestPath(ts, path); ok && st.Transcode.Reason != "" {
		r.transcoded = "yes: " + st.Transcode.Reason
	} else {
		r.transcoded = "no"
	}
	var pkts int
	for _, p := range audio {
		if !p.Received.Before(from) && p.Received.Before(to) {
			pkts++
		}
	}
	if pkts > 0 {
		r.audio = fmt.Sprintf("Opus, %.0f packets/s", float64(pkts)/to.Sub(from).Seconds())
	} else {
		r.audio = fmt.Sprintf("none (%d packets in all)", len(audio))
	}
	return r
}

// serverWarnings: the server's warnings about path, the publisher's
// refusals and hints among them, shortened for the table.
func serverWarnings(ts *testServer, path string) []string {
	var out []string
	for _, l := range ts.logs.Lines("path=" + path + " ") {
		if !strings.Contains(l, "level=WARN") && !strings.Contains(l, "level=ERROR") {
			continue
		}
		if _, msg, ok := strings.Cut(l, "msg="); ok {
			l = msg
		}
		if len(l) > 160 {
			l = l[:160] + "…"
		}
		out = append(out, "log: "+l)
		if len(out) == 2 {
			break
		}
	}
	return out
}

// h264Profile names the profile and level of the first SPS received.
func h264Profile(aus []whepclient.AccessUnit) string {
	for _, au := range aus {
		for _, n := range au.NALUs {
			if len(n) < 4 || n[0]&0x1f != 7 {
				continue
			}
			name := map[byte]string{66: "Baseline", 77: "Main", 88: "Extended", 100: "High",
				110: "High 10", 122: "High 4:2:2", 244: "High 4:4:4"}[n[1]]
			if n[1] == 66 && n[2]&0x40 != 0 {
				name = "Constrained Baseline"
			}
			if name == "" {
				name = fmt.Sprintf("profile_idc %d", n[1])
			}
			return fmt.Sprintf("H.264 %s %d.%d", name, n[3]/10, n[3]%10)
		}
	}
	return "H.264, no SPS"
}

// h265Profile names the general profile and level of the first SPS
// received.
func h265Profile(aus []whepclient.AccessUnit) string {
	for _, au := range aus {
		for _, n := range au.NALUs {
			if len(n) < 3 || h265.NALUType((n[0]>>1)&0x3f) != h265.NALUType_SPS_NUT {
				continue
			}
			var sps h265.SPS
			if err := sps.Unmarshal(n); err != nil {
				return "H.265, SPS: " + err.Error()
			}
			ptl := sps.ProfileTierLevel
			name := map[uint8]string{1: "Main", 2: "Main 10", 3: "Main Still Picture", 4: "RExt"}[ptl.GeneralProfileIdc]
			if name == "" {
				name = fmt.Sprintf("profile_idc %d", ptl.GeneralProfileIdc)
			}
			// general_level_idc is 30 × the level.
			return fmt.Sprintf("H.265 %s %g", name, float64(ptl.GeneralLevelIdc)/30)
		}
	}
	return "H.265, no SPS"
}

func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

func durationCell(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	return d.Round(time.Millisecond).String()
}

func fpsCell(f float64) string {
	if f == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", f)
}

func dash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
