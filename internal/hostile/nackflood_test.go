package hostile

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// nackFlood is how long the attacker floods: 3 s, or HOSTILE_NACKFLOOD
// seconds (the figure is for 10).
func nackFlood(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("HOSTILE_NACKFLOOD")
	if v == "" {
		return 3 * time.Second
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("HOSTILE_NACKFLOOD=%q: want seconds, e.g. 10", v)
	}
	return time.Duration(n) * time.Second
}

// TestNACKFlood: a viewer connected normally sends 500 NACKs a second,
// each for its last 128 video packets. What the server resends to it
// (srtwhep_webrtc_nack_resent_bytes_total) stays within a quarter of what
// it is sent plus the per-viewer floor (32 KiB a second, pkg/rtpsend),
// the NACKs past that are counted, and a plain viewer of the same path
// and the bystander keep playing. The figure is the attacker's received
// rate against the plain viewer's.
func TestNACKFlood(t *testing.T) {
	srv := startServer(t, "")
	b := startBystander(t, srv)
	const path = "live/nackflood"
	// About 2.5 Mbit/s: noise keeps x264 from squeezing the test pattern.
	// Encoded once (3 GOPs) and played in a loop: the noise filter and
	// the encode live cost a good part of a core.
	clip := testkit.Clip(t, "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30",
		"-vf", "noise=alls=30:allf=t", "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency",
		"-bf", "0", "-g", "30", "-b:v", "2500k", "-maxrate", "2500k", "-bufsize", "1000k", "-frames:v", "90")
	testkit.StartFFmpeg(t, append(testkit.LoopArgs(clip), "-f", "mpegts", srv.SRTURL("publish:"+path))...)
	plain := dialViewer(t, srv, path, "plain", whepclient.Options{Decode: true})
	var last atomic.Int32 // the attacker's newest sequence number, -1 before any
	last.Store(-1)
	att := dialViewer(t, srv, path, "attacking", whepclient.Options{
		Decode:       true,
		OnAccessUnit: func(au whepclient.AccessUnit) { last.Store(int32(au.LastSeq)) },
		// Count every resent packet: pion drops a repeated sequence
		// number as an SRTP replay otherwise.
		SettingEngine: func(se *webrtc.SettingEngine) { se.DisableSRTPReplayProtection(true) },
	})
	_, answer := att.SDP()
	ssrc := videoSSRC(t, answer)

	flood := nackFlood(t)
	// The server's CPU without the attack, over as long as the flood
	// will last, with both viewers already playing.
	quietStart, quietCPU := time.Now(), testkit.MustMetric(t, srv.Addrs.Metrics, "process_cpu_seconds_total")
	time.Sleep(flood)
	quiet := (testkit.MustMetric(t, srv.Addrs.Metrics, "process_cpu_seconds_total") - quietCPU) / time.Since(quietStart).Seconds()

	cpuBefore := testkit.MustMetric(t, srv.Addrs.Metrics, "process_cpu_seconds_total")
	resentBefore, _ := testkit.Metric(t, srv.Addrs.Metrics, "srtwhep_webrtc_nack_resent_bytes_total")
	droppedBefore, _ := testkit.Metric(t, srv.Addrs.Metrics, "srtwhep_webrtc_nack_resend_dropped_total")
	attBefore, plainBefore := att.Stats(), plain.Stats()
	start := time.Now()
	tick := time.NewTicker(2 * time.Millisecond)
	nacks := 0
	for time.Since(start) < flood {
		// Catch up with 500 a second when a tick came late.
		if nacks > int(time.Since(start)/(2*time.Millisecond)) {
			<-tick.C
			continue
		}
		newest := uint16(last.Load())
		seqs := make([]uint16, 128)
		for i := range seqs {
			seqs[i] = newest - uint16(i)
		}
		if err := att.WriteRTCP([]rtcp.Packet{&rtcp.TransportLayerNack{SenderSSRC: 1, MediaSSRC: ssrc,
			Nacks: rtcp.NackPairsFromSequenceNumbers(seqs)}}); err != nil {
			t.Fatalf("attacker's NACK: %v", err)
		}
		nacks++
	}
	tick.Stop()
	elapsed := time.Since(start)
	attacked := (testkit.MustMetric(t, srv.Addrs.Metrics, "process_cpu_seconds_total") - cpuBefore) / elapsed.Seconds()
	attAfter, plainAfter := att.Stats(), plain.Stats()
	// The counters are read after the last NACK could have been answered.
	b.waitWindow()
	resentAfter := testkit.MustMetric(t, srv.Addrs.Metrics, "srtwhep_webrtc_nack_resent_bytes_total")
	droppedAfter := testkit.MustMetric(t, srv.Addrs.Metrics, "srtwhep_webrtc_nack_resend_dropped_total")

	got := float64(attAfter.Bytes - attBefore.Bytes)
	stream := float64(plainAfter.Bytes - plainBefore.Bytes)
	resent := resentAfter - resentBefore
	secs := elapsed.Seconds()
	t.Logf("%d NACKs (%.0f/s) for the last 128 packets over %.1f s: attacker received %.2f Mbit/s, the plain viewer %.2f Mbit/s (%.2f×); server resent %.0f bytes, dropped %.0f NACKed packets",
		nacks, float64(nacks)/secs, secs, got*8/secs/1e6, stream*8/secs/1e6, got/stream, resent, droppedAfter-droppedBefore)
	t.Logf("server CPU %.1f %% of a core without the attack, %.1f %% during it (%+.1f points)", quiet*100, attacked*100, (attacked-quiet)*100)
	if got > 1.5*stream {
		t.Errorf("the attacker received %.2f× what a plain viewer of the path did; want at most 1.5×", got/stream)
	}
	// CPU is a figure of the long run in make bench (a quiet machine),
	// not of make test's, where other tests share the cores.
	if os.Getenv("HOSTILE_NACKFLOOD") != "" && attacked-quiet > 0.03 {
		t.Errorf("server CPU rose by %.1f points under the flood; want at most 3", (attacked-quiet)*100)
	}
	// The budget is measured per second over what this viewer was sent:
	// one more window of slack for the window the flood starts in.
	if limit := stream/4 + (secs+2)*(32<<10); resent > limit {
		t.Errorf("resent %.0f bytes to one viewer, over its budget %.0f (a quarter of %.0f bytes sent, plus the floor)", resent, limit, stream)
	}
	if droppedAfter-droppedBefore == 0 {
		t.Errorf("no NACKed packet was dropped during the flood")
	}
	srv.WaitLog(t, 15*time.Second, "viewer asks for more retransmissions than its budget", "path="+path, "session=", "remote=")
	b.Check(t)
}

// videoSSRC is the first a=ssrc of an answer without audio.
func videoSSRC(t *testing.T, answer string) uint32 {
	t.Helper()
	for line := range strings.Lines(answer) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "a=ssrc:")
		if !ok {
			continue
		}
		id, _, _ := strings.Cut(rest, " ")
		if n, err := strconv.ParseUint(id, 10, 32); err == nil {
			return uint32(n)
		}
	}
	t.Fatalf("no a=ssrc in the answer\n%s", answer)
	return 0
}
