package main

// The publisher matrix's rows (TestEncoders, encoders_test.go): each
// publisher people use, with the exact command line it is started with.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
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
