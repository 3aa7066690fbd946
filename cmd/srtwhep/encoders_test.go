package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h265"

	"github.com/srtwhep/srtwhep/internal/whepclient"
)

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
