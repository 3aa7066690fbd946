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
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/metrics"
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
// At 15 % loss the same happens and the advice asks for more round trips.
//
// Not parallel: the relay emulates the link in this process, and the RTT
// SRT measures through it (which sets the advised latency) moves with
// the machine's load.
func TestLossySRTIngest(t *testing.T) {
	requireNetns(t, "iptables")
	ts := startServer(t, nil)
	startFFmpeg(t, x264Args("320x240"), ts.srtURL("publish:live/clean"))
	ts.waitPublisher(t, "live/clean")
	bystander := dialViewer(t, ts, "live/clean")

	pubNS := newNetns(t, "pub")
	// lossyLink is a relay to the server, 50 ms each way, that netfilter
	// drops datagrams of at random with probability loss; it returns the
	// port a publisher in pubNS sends to.
	lossyLink := func(loss string) int {
		in := listenUDPIn(t, pubNS)
		relay := in.LocalAddr().(*net.UDPAddr).Port
		udpLink(t, in, ts.srt.Addr(), linkOpts{delay: 50 * time.Millisecond})
		// INPUT of the namespace's loopback sees both directions: ffmpeg
		// to the relay (data) and the relay to ffmpeg (ACKs, NAKs).
		for _, dir := range []string{"--dport", "--sport"} {
			pubNS.exec(t, "iptables", "-A", "INPUT", "-p", "udp", dir, strconv.Itoa(relay),
				"-m", "statistic", "--mode", "random", "--probability", loss, "-j", "DROP")
		}
		return relay
	}
	relay5 := lossyLink("0.05")
	// Small pictures and a 1 s GOP: at 120 ms most lost packets stay
	// lost, and the stream (and the skip the advice waits for) can only
	// start at an IDR that came through whole.
	publish := func(relay int, path, query string) *testkit.Process {
		args := []string{"-hide_banner", "-loglevel", "warning", "-nostdin",
			"-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
			"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-bf", "0", "-g", "30", "-b:v", "500k",
			"-f", "mpegts", fmt.Sprintf("srt://127.0.0.1:%d?streamid=publish:%s&pkt_size=1316%s", relay, path, query)}
		return testkit.StartProcess(t, "ffmpeg", pubNS.command("ffmpeg", args...))
	}
	// advice waits for path's skip line, checks that it names the latency
	// to use in both units, that the skipped frames are counted as
	// srt_late, and returns what the path's SRT sample recommends and the
	// RTT it rests on, once SRT has seen enough packets for its loss rate
	// to mean something (the first skip may come after a hundred). It
	// stops the publisher.
	advice := func(t *testing.T, pub *testkit.Process, path string) (advised, recommended, rtt time.Duration) {
		t.Helper()
		line := ts.logs.WaitLog(t, 30*time.Second, "skipped", "after lost packets", "SRT dropped", "path="+path+" ")
		t.Logf("advice: %s", line)
		m := recommendedMs.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("advice names no recommended_ms: %s", line)
		}
		ms, _ := strconv.Atoi(m[1])
		advised = time.Duration(ms) * time.Millisecond
		for _, want := range []string{"raise srt.latency (now 120 ms", "try " + m[1] + " ms", "latency=" + m[1] + "000"} {
			if !strings.Contains(line, want) {
				t.Errorf("advice lacks %q", want)
			}
		}
		var sample metrics.PathSample
		for _, p := range ts.ingest.PathSamples() {
			if p.Path == path {
				sample = p
			}
		}
		if sample.FramesDropped["srt_late"] == 0 {
			t.Errorf("frames dropped %v: none counted as srt_late", sample.FramesDropped)
		}
		testkit.WaitFor(t, 30*time.Second, "400 packets from "+path, func() bool {
			for _, s := range ts.ingest.SRTSamples() {
				if s.Path == path && s.PacketsReceived >= 400 {
					return true
				}
			}
			return false
		})
		for _, s := range ts.ingest.SRTSamples() {
			if s.Path != path {
				continue
			}
			t.Logf("%s: SRT received %d packets, lost %d, retransmitted %d", path, s.PacketsReceived, s.PacketsLost, s.PacketsRetransmitted)
			recommended = time.Duration(s.RecommendedLatencySeconds * float64(time.Second))
			rtt = time.Duration(s.RTTSeconds * float64(time.Second))
			if s.LatencySeconds != 0.12 {
				t.Errorf("SRT sample: latency %vs, want 0.12 s", s.LatencySeconds)
			}
		}
		if err := pub.Cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		_ = pub.Wait(t, 10*time.Second)
		if recommended == 0 || rtt == 0 {
			t.Fatalf("no SRT sample for %s with a recommendation and an RTT", path)
		}
		t.Logf("%s: recommended %v at RTT %v", path, recommended, rtt)
		return advised, recommended, rtt
	}

	var recommended, rtt5 time.Duration
	t.Run("default latency skips and advises", func(t *testing.T) {
		var advised time.Duration
		advised, recommended, rtt5 = advice(t, publish(relay5, "live/lossy", ""), "live/lossy")
		// The README's rule for 5 % loss at RTT 100 ms is 500 ms. Upward
		// the advice follows what SRT measured: on a busy test machine the
		// relay's scheduling can stretch the RTT, and early loss estimates
		// rest on few packets; too much latency costs delay, not frames.
		if advised < 400*time.Millisecond || recommended < 400*time.Millisecond {
			t.Errorf("advised %v, recommended %v for 5 %% loss at RTT ≈ 100 ms; the rule gives at least 500 ms", advised, recommended)
		}
	})
	if recommended == 0 {
		t.FailNow()
	}

	// At 15 % loss a retransmission is lost as often as a first copy at
	// 5 %, so the rule (ingest's recommendLatency) asks for 8 round trips
	// instead of 5; compared per round trip, because the RTT SRT measures
	// moves with the machine's load between the two publishers.
	t.Run("15 % loss skips and advises more round trips", func(t *testing.T) {
		relay15 := lossyLink("0.15")
		advised, recommended15, rtt15 := advice(t, publish(relay15, "live/loss15", ""), "live/loss15")
		t.Logf("advised %v at the first skip", advised)
		if recommended15 < 600*time.Millisecond {
			t.Errorf("recommended %v for 15 %% loss at RTT ≈ 100 ms; the rule gives 800 ms", recommended15)
		}
		per5, per15 := float64(recommended)/float64(rtt5), float64(recommended15)/float64(rtt15)
		if per15 <= per5 {
			t.Errorf("recommended %.1f RTTs at 15 %% loss, %.1f at 5 %%: want more at the higher loss", per15, per5)
		}
	})

	// The recommendation follows the RTT SRT measures, which the relay's
	// scheduling stretches to 100-130 ms here: the README's rule
	// for the path, not its example figure for exactly 100 ms.
	t.Run("recommended latency delivers every frame", func(t *testing.T) {
		publish(relay5, "live/lossy2", fmt.Sprintf("&latency=%d", recommended.Microseconds()))
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
// and the viewers beside it lose nothing. It sends receiver reports as a
// browser does, and 5 % random loss is no congestion: it never skips.
//
// Not parallel: the relay emulates the link in this process, and the
// repairs it carries must come in time however busy other tests are.
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
		o.ReceiverReports = true
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
	// Repairs of the packets up to hi finish within a few NACK round
	// trips: the wait ends when none is missing any more, or once the
	// viewer has received 250 packets more (about a second of this
	// stream, in media rather than wall time, so a slow machine gets as
	// long), after which what is missing stays missing.
	missingUpToHi := func() int {
		mu.Lock()
		defer mu.Unlock()
		missing := 0
		for s := lo; s != hi+1; s++ {
			if !delivered[s] {
				missing++
			}
		}
		return missing
	}
	p0 := lossy.Stats().Packets
	testkit.WaitFor(t, 20*time.Second, "the repairs up to the last packet judged", func() bool {
		return missingUpToHi() == 0 || lossy.Stats().Packets >= p0+250
	})
	missing, total := missingUpToHi(), int(hi-lo)+1
	st := lossy.Stats()
	t.Logf("lossy viewer: %d of %d packets never arrived (%.3f %%); %d came late (retransmissions)", missing, total,
		100*float64(missing)/float64(total), st.Reordered)
	if float64(missing) > 0.001*float64(total) {
		t.Errorf("residual loss %d of %d packets, want at most 0.1 %%", missing, total)
	}
	if st.Reordered < uint64(total)/100 {
		t.Errorf("only %d late packets for %d sent through 5 %% loss: NACK recovery did not run", st.Reordered, total)
	}
	if ls := ts.logs.Lines("reader is too slow"); len(ls) > 0 {
		t.Errorf("a viewer dropped frames: %v", ls)
	}
	for i, v := range others {
		checkFullRate(t, fmt.Sprintf("direct viewer %d", i+1), v)
	}
}
