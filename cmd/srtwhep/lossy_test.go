package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/bits"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/pion/webrtc/v4"
	"golang.org/x/sys/unix"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/config"
	"github.com/srtwhep/srtwhep/pkg/metrics"
	"github.com/srtwhep/srtwhep/pkg/whep"
	"github.com/srtwhep/srtwhep/pkg/whepclient"
)

// The lossy-link tests stand a network between one party and the server:
// netfilter's random drop for SRT (in the publisher's namespace), and
// small relays for what netfilter cannot do here (tc netem is missing on
// these kernels): a fixed delay, a random drop that the relay can account
// for per RTP sequence number, and a bandwidth cap. Each test also watches
// viewers that are not behind the bad link: they must keep every frame.

var narrowDialer = net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = errors.Join(unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 16<<10),
			unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG, 1400))
	})
	return errors.Join(err, serr)
}}

// checkFullRate asserts a viewer that was not behind the bad link lost
// nothing and played at the source's 30 fps.
func checkFullRate(t *testing.T, name string, v *viewer) {
	t.Helper()
	checkUndisturbed(t, name, v)
	if fps := liveFrameRate(v.units()); fps < 29 || fps > 31 {
		t.Errorf("%s played at %.1f fps, want 30", name, fps)
	}
}

// frameNumSkips returns the indexes of the pictures where the sequence of
// H.264 frame_num values breaks (every picture of the reference stream is
// a reference, so it counts up by one from each IDR).
func frameNumSkips(aus []whepclient.AccessUnit) ([]int, error) {
	var sps h264.SPS
	haveSPS, havePrev := false, false
	var prev uint64
	var skips []int
	for i, au := range aus {
		var slice []byte
		for _, n := range au.NALUs {
			switch h264.NALUType(n[0] & 0x1f) {
			case h264.NALUTypeSPS:
				if err := sps.Unmarshal(n); err != nil {
					return nil, fmt.Errorf("access unit %d: SPS: %w", i, err)
				}
				haveSPS = true
			case h264.NALUTypeIDR, h264.NALUTypeNonIDR:
				if slice == nil {
					slice = n
				}
			}
		}
		if !haveSPS || slice == nil {
			continue
		}
		// first_mb_in_slice, slice_type, pic_parameter_set_id, then frame_num.
		buf := h264.EmulationPreventionRemove(slice[1:min(len(slice), 32)])
		pos := 0
		for range 3 {
			if _, err := bits.ReadGolombUnsigned(buf, &pos); err != nil {
				return nil, fmt.Errorf("access unit %d: slice header: %w", i, err)
			}
		}
		if sps.SeparateColourPlaneFlag {
			pos += 2
		}
		n := int(sps.Log2MaxFrameNumMinus4) + 4
		fn, err := bits.ReadBits(buf, &pos, n)
		if err != nil {
			return nil, fmt.Errorf("access unit %d: frame_num: %w", i, err)
		}
		if havePrev && fn != (prev+1)%(1<<n) {
			skips = append(skips, i)
		}
		prev, havePrev = fn, true
	}
	return skips, nil
}

var recommendedMs = regexp.MustCompile(`recommended_ms=(\d+)`)

// TestLossySRTIngest: a publisher behind 5 % random loss and 50 ms each
// way (RTT ≈ 100 ms). At the default 120 ms SRT drops retransmissions that
// come too late, the demuxer skips to the next IDR, and the log and the
// metrics say so and what latency to use; at that latency, set by the
// publisher's URL as the README advises, every frame reaches the viewer.
func TestLossySRTIngest(t *testing.T) {
	requireNetns(t, "iptables")
	ts := startServer(t, nil)
	startFFmpeg(t, x264Args("320x240"), ts.srtURL("publish:live/clean"))
	ts.waitPublisher(t, "live/clean")
	bystander := dialViewer(t, ts, "live/clean")

	pubNS := newNetns(t, "pub")
	in := listenUDPIn(t, pubNS)
	relay := in.LocalAddr().(*net.UDPAddr).Port
	udpLink(t, in, ts.srt.Addr(), linkOpts{delay: 50 * time.Millisecond})
	// INPUT of the namespace's loopback sees both directions: ffmpeg to
	// the relay (data) and the relay to ffmpeg (ACKs, NAKs).
	for _, dir := range []string{"--dport", "--sport"} {
		pubNS.exec(t, "iptables", "-A", "INPUT", "-p", "udp", dir, strconv.Itoa(relay),
			"-m", "statistic", "--mode", "random", "--probability", "0.05", "-j", "DROP")
	}
	// Small pictures and a 1 s GOP: at 120 ms most lost packets stay
	// lost, and the stream (and the skip the advice waits for) can only
	// start at an IDR that came through whole.
	publish := func(path, query string) *testkit.Process {
		args := []string{"-hide_banner", "-loglevel", "warning", "-nostdin",
			"-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
			"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-bf", "0", "-g", "30", "-b:v", "500k",
			"-f", "mpegts", fmt.Sprintf("srt://127.0.0.1:%d?streamid=publish:%s&pkt_size=1316%s", relay, path, query)}
		return testkit.StartProcess(t, "ffmpeg", pubNS.command("ffmpeg", args...))
	}

	var recommended time.Duration
	t.Run("default latency skips and advises", func(t *testing.T) {
		pub := publish("live/lossy", "")
		line := ts.logs.WaitLog(t, 30*time.Second, "skipped", "after lost packets", "SRT dropped", "path=live/lossy")
		t.Logf("advice: %s", line)
		m := recommendedMs.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("advice names no recommended_ms: %s", line)
		}
		ms, _ := strconv.Atoi(m[1])
		advised := time.Duration(ms) * time.Millisecond
		for _, want := range []string{"raise srt.latency (now 120 ms", "try " + m[1] + " ms", "latency=" + m[1] + "000"} {
			if !strings.Contains(line, want) {
				t.Errorf("advice lacks %q", want)
			}
		}
		// The README's rule for 5 % loss at RTT 100 ms is 500 ms. Upward
		// the advice follows what SRT measured: on a busy test machine the
		// relay's scheduling can stretch the RTT, and early loss estimates
		// rest on few packets; too much latency costs delay, not frames.
		if advised < 400*time.Millisecond {
			t.Errorf("advised %v for 5 %% loss at RTT ≈ 100 ms; the rule gives at least 500 ms", advised)
		}
		var path metrics.PathSample
		for _, p := range ts.ingest.PathSamples() {
			if p.Path == "live/lossy" {
				path = p
			}
		}
		if path.FramesDropped["srt_late"] == 0 {
			t.Errorf("frames dropped %v: none counted as srt_late", path.FramesDropped)
		}
		for _, s := range ts.ingest.SRTSamples() {
			if s.Path != "live/lossy" {
				continue
			}
			// The gauge, read last, has the longest look at the path.
			recommended = time.Duration(s.RecommendedLatencySeconds * float64(time.Second))
			if s.LatencySeconds != 0.12 || recommended < 400*time.Millisecond {
				t.Errorf("SRT sample: latency %vs, recommended %v; want 0.12 s and at least 500 ms", s.LatencySeconds, recommended)
			}
		}
		if err := pub.Cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		_ = pub.Wait(t, 10*time.Second)
	})
	if recommended == 0 {
		t.FailNow()
	}

	// The recommendation follows the RTT SRT measures, which the relay's
	// scheduling (and -race) stretch to 100-130 ms here: the README's rule
	// for the path, not its example figure for exactly 100 ms.
	t.Run("recommended latency delivers every frame", func(t *testing.T) {
		publish("live/lossy2", fmt.Sprintf("&latency=%d", recommended.Microseconds()))
		ts.waitPublisher(t, "live/lossy2")
		v := dialViewer(t, ts, "live/lossy2")
		v.waitUnits(t, 240, 30*time.Second)
		checkFullRate(t, "viewer behind the lossy publisher", v)
		for _, p := range ts.ingest.Stats() {
			if p.Path != "live/lossy2" || p.Publisher == nil {
				continue
			}
			st, tot := p.Publisher.SRT, p.Totals
			t.Logf("SRT at %d ms: lost %d, retransmitted %d, dropped %d, RTT %.0f ms", st.LatencyMs, st.PacketsLost,
				st.PacketsRetransmitted, st.PacketsDropped, st.RTTMs)
			if time.Duration(st.LatencyMs)*time.Millisecond != recommended {
				t.Errorf("latency in effect %d ms, want %v from the publisher's URL", st.LatencyMs, recommended)
			}
			if st.PacketsLost == 0 || st.PacketsRetransmitted == 0 {
				t.Errorf("no loss to repair (lost %d, retransmitted %d): the link is not lossy", st.PacketsLost, st.PacketsRetransmitted)
			}
			if st.PacketsDropped != 0 || tot.DroppedSRTLate != 0 || tot.DroppedDecodeError != 0 {
				t.Errorf("at %v SRT dropped %d packets and %d+%d frames were skipped, want none",
					recommended, st.PacketsDropped, tot.DroppedSRTLate, tot.DroppedDecodeError)
			}
		}
	})
	checkFullRate(t, "viewer of the clean path", bystander)
}

// TestLossyViewerNACK: a viewer whose link drops 5 % of datagrams each way
// gets all but at most 0.1 % of the packets through NACK retransmission,
// and the viewers beside it lose nothing.
func TestLossyViewerNACK(t *testing.T) {
	requireNetns(t)
	ts := startServer(t, nil)
	startFFmpeg(t, x264Args("1280x720"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")
	others := []*viewer{dialViewer(t, ts, "live/cam1"), dialViewer(t, ts, "live/cam1")}

	// The viewer's socket and the relay's client side live in their own
	// namespace, so the server cannot reach the viewer around the relay.
	vNS := newNetns(t, "viewer")
	mediaPort := addrPort(t, ts.addrs.Load().WebRTCUDP)
	relayIn := listenUDPIn(t, vNS)
	var (
		mu        sync.Mutex
		delivered = map[uint16]bool{}
	)
	udpLink(t, relayIn, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: mediaPort}, linkOpts{
		loss: 0.05,
		down: func(p []byte) {
			// RTP (not RTCP, RFC 5761: types 64-95 after the marker bit)
			// sequence numbers are in the clear in SRTP.
			if len(p) >= 12 && p[0]>>6 == 2 && (p[1]&0x7f < 64 || p[1]&0x7f > 95) {
				mu.Lock()
				delivered[binary.BigEndian.Uint16(p[2:])] = true
				mu.Unlock()
			}
		},
	})
	sock := listenUDPIn(t, vNS)
	mux := webrtc.NewICEUDPMux(nil, sock)
	t.Cleanup(func() { mux.Close() })
	lossy := dialViewer(t, ts, "live/cam1", func(o *whepclient.Options) {
		o.NACK = true
		o.Decode = false
		o.RewriteAnswer = candidatePort("udp", mediaPort, relayIn.LocalAddr().(*net.UDPAddr).Port)
		o.SettingEngine = func(se *webrtc.SettingEngine) {
			testkit.LoopbackOnly(se)
			se.SetICEUDPMux(mux)
		}
	})
	testkit.WaitFor(t, 30*time.Second, "3000 packets at the lossy viewer", func() bool { return lossy.Stats().Packets >= 3000 })
	// The last second's losses may still be under repair: judge the
	// packets before it.
	mu.Lock()
	var lo, hi uint16
	first := true
	for seq := range delivered {
		if first || int16(seq-lo) < 0 {
			lo = seq
		}
		if first || int16(seq-hi) > 0 {
			hi = seq
		}
		first = false
	}
	mu.Unlock()
	time.Sleep(time.Second) // repairs of the packets up to hi finish
	mu.Lock()
	missing, total := 0, int(hi-lo)+1
	for s := lo; s != hi+1; s++ {
		if !delivered[s] {
			missing++
		}
	}
	mu.Unlock()
	st := lossy.Stats()
	t.Logf("lossy viewer: %d of %d packets never arrived (%.3f %%); %d came late (retransmissions)", missing, total,
		100*float64(missing)/float64(total), st.Reordered)
	if float64(missing) > 0.001*float64(total) {
		t.Errorf("residual loss %d of %d packets, want at most 0.1 %%", missing, total)
	}
	if st.Reordered < uint64(total)/100 {
		t.Errorf("only %d late packets for %d sent through 5 %% loss: NACK recovery did not run", st.Reordered, total)
	}
	for i, v := range others {
		checkFullRate(t, fmt.Sprintf("direct viewer %d", i+1), v)
	}
}

// TestNarrowViewer: a viewer on a 1 Mbit/s link (ICE-TCP through a capped
// relay) cannot take a 2.5 Mbit/s stream. Its writer blocks, its queue
// fills, and it drops to the next IDR ("reader is too slow") while the
// viewers beside it keep every frame.
func TestNarrowViewer(t *testing.T) {
	// A short queue overflows soon after the writer blocks.
	ts := startServer(t, func(c *config.Config) { c.Readers.QueueSize = 20 },
		func(c *whep.Config) { c.TCPListen = "127.0.0.1:0" })
	startFFmpeg(t, x264Args("1280x720"), ts.srtURL("publish:live/cam1"))
	ts.waitPublisher(t, "live/cam1")
	others := []*viewer{dialViewer(t, ts, "live/cam1"), dialViewer(t, ts, "live/cam1")}

	tcpAddr := ts.addrs.Load().WebRTCTCP
	if tcpAddr == "" {
		t.Fatal("ICE-TCP is not listening")
	}
	relay := tcpCapLink(t, tcpAddr, 1_000_000)
	narrow := dialViewer(t, ts, "live/cam1", func(o *whepclient.Options) {
		o.RewriteAnswer = candidatePort("tcp", addrPort(t, tcpAddr), relay)
		o.SettingEngine = func(se *webrtc.SettingEngine) {
			testkit.LoopbackOnly(se)
			se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeTCP4})
		}
	})
	id := sessionID(narrow)
	ts.logs.WaitLog(t, 30*time.Second, "reader is too slow, discarding", "session="+id)
	// The frames queued in the link before the drop still arrive first;
	// then the viewer must show the skip and play on past it. RTP
	// timestamps cannot show it (frames sent behind the live edge are
	// stamped as catch-up), H.264 frame_num can: it counts every picture.
	var skips []int
	testkit.WaitFor(t, 30*time.Second, "the narrow viewer to play on after a skip", func() bool {
		var err error
		skips, err = frameNumSkips(narrow.units())
		if err != nil {
			t.Fatal(err)
		}
		return len(skips) > 0 && narrow.count()-skips[len(skips)-1] >= 10
	})
	aus := narrow.units()
	for _, i := range skips {
		if !aus[i].IDR {
			t.Errorf("narrow viewer resumed at a non-IDR picture (access unit %d)", i)
		}
	}
	if st := narrow.Stats(); st.SeqGaps != 0 || st.BrokenAUs != 0 {
		t.Errorf("narrow viewer: %d sequence gaps, %d broken pictures; want 0: it must lose whole frames, never packets",
			st.SeqGaps, st.BrokenAUs)
	}
	t.Logf("narrow viewer: %d pictures, skips to an IDR at %v", len(aus), skips)
	for _, l := range ts.logs.Lines("reader is too slow") {
		if !strings.Contains(l, "session="+id) {
			t.Errorf("a viewer on a good link dropped frames: %s", l)
		}
	}
	for i, v := range others {
		checkFullRate(t, fmt.Sprintf("direct viewer %d", i+1), v)
	}
}
