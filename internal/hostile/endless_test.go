package hostile

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"

	"github.com/srtwhep/srtwhep/internal/srtcall"
	"github.com/srtwhep/srtwhep/internal/testkit"
)

// TestEndlessPES publishes valid tables and a real GOP, then TS packets on
// the video PID that never start a new unit (continuity counters correct)
// at 20 Mbit/s for 5 s: the server's RSS must grow by far less than the
// bytes sent (the demuxer drops the unit at maxUnitBytes), the warning
// names the setting, and the bystander on another path keeps its frame
// rate. make bench sets HOSTILE_ENDLESS=20:60,50:60 (Mbit/s:seconds) for
// the long runs, each against a fresh server.
func TestEndlessPES(t *testing.T) {
	t.Parallel()
	// The short run lowers the cap to 1 MiB, so the growth it allows is
	// far from what the unit would reach uncapped in 5 s (12.5 MB); the
	// long runs keep the default.
	runs, capBytes := os.Getenv("HOSTILE_ENDLESS"), 4<<20
	if runs == "" {
		runs, capBytes = "20:5", 1<<20
	}
	for _, run := range strings.Split(runs, ",") {
		mbit, secs, ok := strings.Cut(run, ":")
		rate, err1 := strconv.ParseFloat(mbit, 64)
		seconds, err2 := strconv.ParseFloat(secs, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("HOSTILE_ENDLESS=%q: want MBITS:SECONDS[,…], e.g. 20:60,50:60", runs)
		}
		t.Run(run, func(t *testing.T) { endlessPES(t, rate, seconds, capBytes) })
	}
}

func endlessPES(t *testing.T, mbits, seconds float64, capBytes int) {
	srv := startServer(t, fmt.Sprintf("pathDefaults:\n  maxUnitBytes: %d\n", capBytes))
	b := startBystander(t, srv)

	head, pid, cc := realGOP(t)
	sock := dialPublisher(t, srv, "live/endless")
	defer srtcall.Close(sock)

	rssBefore := rss(t, srv)
	const msg = 7 * 188
	rate := mbits * 1e6 / 8 // bytes a second
	for off := 0; off < len(head); off += msg {
		if _, err := sock.Write(head[off:min(off+msg, len(head))]); err != nil {
			t.Fatalf("writing the GOP: %v", err)
		}
	}
	// Wait for the path to go live, so what follows extends a unit the
	// demuxer is really assembling.
	srv.WaitLog(t, 10*time.Second, "path=live/endless", "stream parameters")

	var pkt [msg]byte
	start := time.Now()
	sent, peak := 0, rssBefore
	for float64(sent) < rate*seconds {
		for i := 0; i < msg; i += 188 {
			cc = (cc + 1) & 0x0f
			p := pkt[i : i+188]
			p[0], p[1], p[2], p[3] = 0x47, byte(pid>>8&0x1f), byte(pid), 0x10|cc // payload only, no unit start
			for j := 4; j < 188; j++ {
				p[j] = 0x55
			}
		}
		if _, err := sock.Write(pkt[:]); err != nil {
			t.Fatalf("after %d bytes: %v", sent, err)
		}
		sent += msg
		if ahead := time.Duration(float64(sent)/rate*float64(time.Second)) - time.Since(start); ahead > 0 {
			time.Sleep(ahead) // pacing to the bitrate, not a wait for a state
		}
		if sent%(1<<20) < msg {
			peak = max(peak, rss(t, srv))
		}
	}
	peak = max(peak, rss(t, srv))
	growth := peak - rssBefore
	t.Logf("endless PES: %.1f MB sent at %g Mbit/s in %.1f s; server RSS %.1f → peak %.1f MB (growth %.1f MB)",
		float64(sent)/1e6, mbits, time.Since(start).Seconds(), float64(rssBefore)/1e6, float64(peak)/1e6, float64(growth)/1e6)
	// Uncapped, the TS library holds every packet (more than the bytes
	// sent: main grew by 20.9 MB for the 12.5 MB of the short run).
	if limit := min(64<<20, sent); growth > limit {
		t.Errorf("RSS grew by %.1f MB while %.1f MB of one endless unit arrived; want under %.1f MB",
			float64(growth)/1e6, float64(sent)/1e6, float64(limit)/1e6)
	}
	srv.WaitLog(t, 10*time.Second, "path=live/endless", "access unit too large", fmt.Sprintf("maxUnitBytes=%d", capBytes))
	if n, most := len(srv.Log.Lines("access unit too large")), int(seconds/10)+1; n < 1 || n > most {
		t.Errorf("%d unit-cap warnings in %g s, want 1 to %d (one per 10 s)", n, seconds, most)
	}
	srtcall.Close(sock)
	b.Check(t)
}

// realGOP is one second of ffmpeg's H.264 in MPEG-TS, its video PID and
// the continuity counter of its last packet on that PID.
func realGOP(t *testing.T) (ts []byte, pid uint16, cc uint8) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "gop.ts")
	testkit.FFmpeg(t, "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-t", "1",
		"-c:v", "libx264", "-preset", "ultrafast", "-bf", "0", "-g", "30", "-f", "mpegts", file)
	ts, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	r := &mpegts.Reader{R: bytes.NewReader(ts)}
	if err := r.Initialize(); err != nil {
		t.Fatal(err)
	}
	for _, tr := range r.Tracks() {
		if _, ok := tr.Codec.(*mpegts.CodecH264); ok {
			pid = tr.PID
		}
	}
	for i := 0; i+188 <= len(ts); i += 188 {
		if uint16(ts[i+1]&0x1f)<<8|uint16(ts[i+2]) == pid {
			cc = ts[i+3] & 0x0f
		}
	}
	return ts, pid, cc
}

// rss is the server process's resident set from /proc/PID/status.
func rss(t *testing.T, srv *testkit.Server) int {
	t.Helper()
	return procStatusBytes(t, srv, "VmRSS:")
}

// procStatusBytes is the field of /proc/PID/status of the server that
// starts with key, a size in kB, in bytes.
func procStatusBytes(t *testing.T, srv *testkit.Server, key string) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", srv.Cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/PID/status", key)
	return 0
}
