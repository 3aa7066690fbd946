package main

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// garbageBytes is how much random data TestGarbageNeverLive has the
// server read: 0.6 MB, 2.4 s at the publisher's 250 kB/s, thousands of
// TS-sized chunks for a sync byte to be found in by chance.
const garbageBytes = 600 << 10

// TestGarbageNeverLive: a publisher that sends random bytes inside a valid
// SRT connection never makes its path live: a viewer's POST is 409 the
// whole time, and the hub never holds the path.
func TestGarbageNeverLive(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	// Random bytes at 250 kB/s, written raw (no MPEG-TS) to the SRT URL.
	ff := testkit.StartFFmpeg(t, "-re", "-f", "u8", "-ar", "250000", "-ac", "1", "-i", "/dev/urandom",
		"-c", "copy", "-f", "u8", ts.srtURL("publish:live/junk"))
	ts.logs.WaitLog(t, 10*time.Second, "publisher connected", "live/junk")
	offer := offerSDP(t)
	// "The whole time" is measured in what the server has read, not in
	// wall time: between two POSTs the server reads another 1/20 of the
	// garbage, so the POSTs sample its whole course.
	posts := 0
	for read := int64(0); read < garbageBytes; {
		code, _, body := request(t, http.MethodPost, ts.httpURL("/live/junk/whep"), "", "application/sdp", offer)
		if code != http.StatusConflict {
			t.Fatalf("POST %d while the publisher sends garbage: %d %q", posts, code, body)
		}
		posts++
		for _, p := range ts.hub.Paths() {
			if p.Name == "live/junk" {
				t.Fatalf("the hub holds live/junk: %+v", p)
			}
		}
		if exited, _ := ff.Exited(); exited {
			t.Fatal("the garbage publisher stopped early; the test needs it connected")
		}
		next := read + garbageBytes/20
		testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("the server to read %d bytes of garbage", next), func() bool {
			read = srtBytes(ts, "live/junk")
			return read >= next
		})
	}
	if posts < 10 {
		t.Fatalf("only %d POSTs while the server read %d bytes", posts, garbageBytes)
	}
}

// srtBytes is how many payload bytes the server has read from path's
// publisher over SRT, from the SRT server: a connection that has shown no
// picture is no publisher of the path's in the API.
func srtBytes(ts *testServer, path string) int64 {
	for _, c := range ts.srt.Conns() {
		if c.Path == path {
			return c.Stats.Bytes
		}
	}
	return 0
}

// TestLongPathNames: a 10 kB path name gets a short 400 from WHEP and the
// API, and an SRT reject (bad request) for a streamid over the cap; no
// answer and no log line carries more than the cap of it.
func TestLongPathNames(t *testing.T) {
	t.Parallel()
	ts := startServer(t, nil)
	long := strings.Repeat("a", 10<<10)
	for _, c := range []struct {
		method, path, ctype, body string
		code                      int
	}{
		// The WHEP endpoint of a name no path can have does not exist
		// (DESIGN §4); the API refuses the name as a bad argument.
		{http.MethodPost, "/" + long + "/whep", "application/sdp", offerSDP(t), http.StatusNotFound},
		{http.MethodGet, "/v1/paths/" + long, "", "", http.StatusBadRequest},
		{http.MethodDelete, "/v1/publishers/" + long, "", "", http.StatusBadRequest},
	} {
		url := ts.httpURL(c.path)
		if strings.HasPrefix(c.path, "/v1/") {
			url = ts.apiURL(c.path)
		}
		code, _, body := request(t, c.method, url, "", c.ctype, c.body)
		if code != c.code || len(body) > 400 || !strings.Contains(body, "invalid path name") {
			t.Errorf("%s %.30s…: %d, %d bytes: %.300s", c.method, c.path, code, len(body), body)
		}
	}

	// The SRT streamid holds 512 bytes at most; 300 is past the path cap.
	ff := testkit.StartFFmpeg(t, append(x264Args("320x240"), "-t", "5", "-f", "mpegts",
		ts.srtURL("publish:live/"+strings.Repeat("b", 300)))...)
	line := ts.logs.WaitLog(t, 10*time.Second, "srt publisher rejected", "bad request")
	if !strings.Contains(line, "more than the 128 allowed") || len(line) > 1000 {
		t.Errorf("rejection log line (%d bytes): %s", len(line), line)
	}
	if err := ff.Wait(t, 15*time.Second); err == nil {
		t.Errorf("ffmpeg published to an over-long path")
	}
	for _, l := range strings.Split(ts.logs.String(), "\n") {
		if len(l) > 2000 {
			t.Errorf("a %d-byte log line: %.200s…", len(l), l)
		}
	}
}

// TestRogueSRTFlood: tens of thousands of garbage datagrams a second to the
// SRT port (measured before the limit: 111,652 ERROR lines in 10 s) make
// libsrt log about one line a second, with a count, while a real
// publisher's viewer keeps every frame.
//
// Not parallel: libsrt's log handler and its rate limit are global to the
// process, so another test's server would take these lines.
func TestRogueSRTFlood(t *testing.T) {
	ts := startServer(t, nil)
	// The publisher reports how many pictures it has sent (every 100 ms,
	// on stdout): whether the flood cost ingest frames is then a
	// comparison with what was published meanwhile, not with a rate
	// measured earlier on a machine whose load changes.
	pub := startFFmpeg(t, append([]string{"-nostats", "-progress", "pipe:1", "-stats_period", "0.1"}, x264Args("640x360")...),
		ts.srtURL("publish:live/cam"))
	ts.waitPublisher(t, "live/cam")
	v := dialViewer(t, ts, "live/cam")
	v.waitUnits(t, 30, 15*time.Second)

	const flood = 5 * time.Second
	libsrtBefore := len(ts.logs.Lines("component=libsrt"))
	unitsBefore, inBefore, pubBefore := v.count(), ts.framesIn("live/cam"), publishedFrames(t, pub)
	start := time.Now()
	var wg sync.WaitGroup
	// Two senders of 12,500 datagrams a second: the rate of the measured
	// flood (248,800 in 10 s).
	sent := make([]int, 2)
	const perSender, burst = 12500, 25
	for w := range sent {
		wg.Go(func() {
			c, err := net.DialUDP("udp", nil, ts.srt.Addr())
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			// A mix of what a scanner sends: handshakes addressed to the
			// listener (socket id 0) with a junk body, which libsrt
			// complains about, and plain junk.
			pkt := make([]byte, 128)
			for i := 0; time.Since(start) < flood; i++ {
				for j := range pkt {
					pkt[j] = byte(i*7 + j*13 + w)
				}
				n := 16 + i%112
				if i%2 == 0 {
					pkt[0], pkt[1], pkt[2], pkt[3] = 0x80, 0x00, 0x00, 0x00 // control, handshake
					pkt[12], pkt[13], pkt[14], pkt[15] = 0, 0, 0, 0         // to the listener
					n = 64 + i%64
				}
				if _, err := c.Write(pkt[:n]); err == nil {
					sent[w]++
				}
				// Pacing, as a real flood has a rate: without it the two
				// senders would take both cores from everything else.
				if i%burst == burst-1 {
					next := start.Add(time.Duration(i+1) * time.Second / perSender)
					time.Sleep(time.Until(next))
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	units, in := v.count()-unitsBefore, int(ts.framesIn("live/cam")-inBefore)
	published := publishedFrames(t, pub) - pubBefore
	total := 0
	for _, n := range sent {
		total += n
	}
	// A loaded machine slows the senders down; 8,000 a second is still
	// a flood that used to mean 8,000 log lines a second.
	if total < 40000 {
		t.Fatalf("only %d datagrams sent in %v; the flood is too weak to test anything", total, elapsed)
	}
	// libsrt complains about thousands of the flood's datagrams a second
	// and the limit lets one a second through, so its last complaints are
	// folded into a summary ("suppressed=N"), written when their second
	// is over: that line ends what the flood logged. It may already be
	// written by now (a loaded machine delays this goroutine), so the
	// wait is for the last rogue line to be a summary, not for a new one;
	// two intervals after the flood, whatever it logged is written.
	ended := time.Now()
	testkit.WaitFor(t, 5*time.Second, "libsrt's summary of the flood's last second", func() bool {
		rogue := ts.logs.Lines("component=libsrt", "ROGUE")
		return len(rogue) > 0 && strings.Contains(rogue[len(rogue)-1], "suppressed=") || time.Since(ended) > 2*time.Second
	})
	lines := ts.logs.Lines("component=libsrt")[libsrtBefore:]
	t.Logf("%d garbage datagrams in %v; %d libsrt lines; during the flood the publisher sent %d frames, ingest got %d, the viewer %d",
		total, elapsed.Round(time.Millisecond), len(lines), published, in, units)
	// One line a second of the flood's one kind of complaint ("ROGUE HS
	// RECEIVED"), plus the first line and the last summary; any other
	// kind (none is expected) is limited the same way.
	secs := int(elapsed/time.Second) + 2
	rogue := 0
	for _, l := range lines {
		if strings.Contains(l, "ROGUE") {
			rogue++
		}
	}
	if rogue == 0 || rogue > secs || len(lines) > 2*secs {
		t.Errorf("%d libsrt lines (%d about the rogue handshakes) during a %v flood, want at most %d:\n%s",
			len(lines), rogue, elapsed, secs, strings.Join(lines, "\n"))
	}
	// The publisher's frames get through, and the viewer gets every one
	// of them. Ingest may lag the publisher's count by the frames in
	// flight (SRT's 120 ms latency, the 100 ms between two reports): 10
	// frames of slack, against about 150 published.
	if in < published-10 {
		t.Errorf("ingest got %d frames during the flood, the publisher sent %d", in, published)
	}
	if units < in-3 {
		t.Errorf("viewer got %d of the %d frames published during the flood", units, in)
	}
}

// publishedFrames is the last frame count an ffmpeg started with
// -progress pipe:1 reported.
func publishedFrames(t *testing.T, p *testkit.Process) int {
	t.Helper()
	out := p.Log.String()
	// A line still being written could be a number's first digits.
	out = out[:strings.LastIndexByte(out, '\n')+1]
	lines := strings.Split(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(lines[i], "frame="); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("ffmpeg progress line %q: %v", lines[i], err)
			}
			return n
		}
	}
	t.Fatalf("ffmpeg reported no progress:\n%s", out)
	return 0
}
