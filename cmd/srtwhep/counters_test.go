package main

import (
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/config"
	"github.com/srtwhep/srtwhep/pkg/wheplayer"
)

// notProducible lists the counters this test cannot make move, with why.
// Every other srtwhep_* counter the server exports must leave 0 here.
var notProducible = map[string]string{
	// The kernel refuses a datagram on the shared media socket only when
	// its send buffer is full or netfilter drops it on the way out (EPERM).
	// The in-process server's socket lives in the test process's network
	// namespace, the machine's own, whose firewall tests never touch, and
	// loopback at a few test streams never fills a send buffer.
	"srtwhep_webrtc_udp_datagrams_refused_total": "needs the kernel to refuse a send in the root namespace",
	"srtwhep_webrtc_udp_receive_drops_total":     "needs the kernel to overflow a 4 MiB receive buffer (pkg/sockbuf's TestDrops moves it on a small one)",
	// Its reconnect series moves only when the server drains, which ends
	// this test's server; events_test.go moves every type against the
	// binary (TestEventsPublisherLifecycle, TestEventsSIGTERMReconnect).
	"srtwhep_sse_events_total": "reconnect needs a drain, which ends the server; events_test.go moves each type",
	// live/bframes moves its bframes series here; the other reasons need
	// other encoders (GStreamer, H.265): gstreamer_test.go and
	// pkg/ingest's refusals_test.go move them.
	"srtwhep_publisher_refusals_total": "reasons other than bframes need GStreamer or H.265 publishers; gstreamer_test.go and pkg/ingest move them",
	// ICE-TCP listens only on a fixed port (tcpPort has no ephemeral
	// form), so the in-process servers run without it. internal/hostile's
	// TestICETCPFlood moves per_client against the binary, pkg/mediaplane's
	// TestICETCPPerClientCap and TestICETCPEvictedClosed move per_client
	// and evicted on the plane; global takes 4,096 connections.
	"srtwhep_webrtc_ice_tcp_refused_total": "ICE-TCP is off in the in-process server (fixed port only); internal/hostile TestICETCPFlood and pkg/mediaplane TestICETCPPerClientCap move per_client",
	"srtwhep_webrtc_ice_tcp_evicted_total": "ICE-TCP is off in the in-process server (fixed port only); pkg/mediaplane TestICETCPEvictedClosed moves it",
	// A caught panic is a bug: nothing a test may send reaches one. pkg/srt
	// TestServePanics and pkg/mediaplane TestViewerInputPanics cause real
	// runtime panics through the components' own callbacks.
	"srtwhep_panics_total": "needs a bug; pkg/srt TestServePanics and pkg/mediaplane TestViewerInputPanics move it",
	// A refusal needs a second heavy transcode or an 8K stream, which this
	// shared server's other subtests would feel.
	"srtwhep_transcode_refusals_total": "needs a transcode past the budget or pictures past transcode.maxDecodeArea; internal/hostile TestTranscodeFitsTheBox (cpu_budget) and TestTranscode8KRefused (decode_area) move it against the binary",
}

// TestCountersMove produces, against one real server, the event behind
// every srtwhep_* counter: a publisher and viewers, a stalled viewer, a
// viewer behind a narrow link, SRT loss and late packets (netfilter in a
// publisher's network namespace), broken TS, B-frames, and each reason a WHEP offer is refused. Which
// counters exist is read from the scrape itself, so a counter added later
// without an event here fails the test until one is added (or it is listed
// in notProducible, with the reason).
func TestCountersMove(t *testing.T) {
	t.Parallel()
	requireNetns(t, "iptables")
	held, release := stallOnce(t, func(c *config.Config) {
		c.Metrics.Listen = "127.0.0.1:0"
		c.Readers.QueueSize = 20    // a stalled viewer overflows in under a second
		c.HTTP.MaxHandshakes = 1    // one viewer stuck after ICE fills it
		c.HTTP.MaxPendingOffers = 1 // one never-connecting offer fills it
		// The defaults, for offer_rate; the test's own POSTs stay below.
		def := config.Default()
		c.HTTP.OfferRate, c.HTTP.OfferBurst = def.HTTP.OfferRate, def.HTTP.OfferBurst
		c.WebRTC.HandshakeTimeout = config.Duration(2 * time.Second)
		c.Paths = map[string]config.Path{
			"live/idle": {},
			"live/priv": {ReadTokens: []string{"viewer-token"}},
			// Refused there, so the bframes drop counter moves (auto
			// would transcode).
			"live/bframes": {Video: config.VideoPassthrough},
			"live/tc":      {Video: config.VideoTranscode},
			// A ladder below its 320x240 source, for the switches.
			"live/rung": {Renditions: config.Renditions{Steps: []config.Rendition{{Height: 144, Bitrate: 150_000}}}},
		}
	})
	ts := held.ts
	w := &counterWatch{addr: ts.addrs.Load().Metrics, max: map[string]float64{}}

	t.Run("configured path without publisher", func(t *testing.T) {
		w.wantPublisherUp(t, w.scrape(t), "live/idle", 0)
	})

	// Publishers start together; each subtest waits for its own events.
	pubM := startFFmpeg(t, x264AACArgs, ts.srtURL("publish:live/m"))
	startFFmpeg(t, liveX264Args("320x240", "-bf", "2"), ts.srtURL("publish:live/bframes"))
	startFFmpeg(t, x264Args("320x240"), ts.srtURL("publish:live/tc"))
	startFFmpeg(t, x264Args("320x240"), ts.srtURL("publish:live/rung"))
	pubNS := newNetns(t, "pub")
	relay := udpRelay(t, pubNS, ts.srt.Addr())
	ffmpegInNetns(t, pubNS, "320x240",
		fmt.Sprintf("srt://127.0.0.1:%d?streamid=publish:live/lossy&pkt_size=1316", relay))

	// Two viewers of live/m for the rest of the test; the caps below are
	// lowered under them.
	ts.waitPublisher(t, "live/m")
	ts.dialOne(t, "live/m").waitUnits(t, 10, 15*time.Second)
	slow := ts.dialOne(t, "live/m")
	slow.waitUnits(t, 5, 15*time.Second)

	t.Run("ingest and viewers", func(t *testing.T) {
		held.stall(sessionID(slow))
		for _, kind := range []string{"video", "audio"} {
			w.waitAbove(t, "srtwhep_path_frames_dropped_total", "path", "live/m", "reason", "slow_reader", "kind", kind)
		}
		release()
		for _, name := range []string{"srtwhep_path_ingest_bytes_total", "srtwhep_path_ingest_frames_total",
			"srtwhep_path_sent_bytes_total", "srtwhep_path_sent_packets_total",
			"srtwhep_srt_packets_received_total", "srtwhep_srt_received_bytes_total",
			"srtwhep_path_audio_frames_in_total", "srtwhep_path_audio_frames_out_total",
			"srtwhep_path_audio_transcode_cpu_seconds_total"} {
			w.waitAbove(t, name, "path", "live/m")
		}
		w.waitAbove(t, "srtwhep_webrtc_sessions_total")
		w.waitAbove(t, "srtwhep_webrtc_udp_datagrams_sent_total")
	})

	t.Run("congested viewer", func(t *testing.T) {
		// live/m is about 650 kbit/s with its sound: a 100 kbit/s link
		// loses most of it (the rule needs 20 % in two windows in a row,
		// which the viewer's NACKed resends must not bring below on a
		// loaded machine), the viewer's receiver reports say so, and its
		// video skips to IDRs.
		narrow := dialNarrowUDPViewer(t, ts, "live/m", 100_000, nil)
		w.waitAbove(t, "srtwhep_path_frames_dropped_total", "path", "live/m", "reason", "congested", "kind", "video")
		_ = narrow.Close()
	})

	t.Run("media plane receive and send", func(t *testing.T) {
		// The viewers so far checked, shook hands and reported (the
		// congested one sends receiver reports every second).
		for _, kind := range []string{"stun", "dtls", "rtcp", "consent"} {
			w.waitAbove(t, "srtwhep_webrtc_received_datagrams_total", "kind", kind)
		}
		w.waitAbove(t, "srtwhep_webrtc_send_syscalls_total")
		w.waitAbove(t, "srtwhep_webrtc_send_messages_total")
		forgeDatagrams(t, ts, w)
		dropAtICEStart(t, ts, w)
	})

	t.Run("srt loss, retransmission and late drops", func(t *testing.T) {
		ts.waitPublisher(t, "live/lossy")
		// Drop on the relay's receive side (INPUT), not on ffmpeg's send
		// side: an OUTPUT drop would fail ffmpeg's sendmsg with EPERM
		// instead of losing the packet on the way.
		data := fmt.Sprintf("INPUT -p udp --dport %d -m statistic --mode random --probability 0.05 -j DROP", relay)
		pubNS.exec(t, append([]string{"iptables", "-A"}, strings.Fields(data)...)...)
		w.waitAbove(t, "srtwhep_srt_packets_lost_total", "path", "live/lossy")
		w.waitAbove(t, "srtwhep_srt_packets_retransmitted_total", "path", "live/lossy")
		// With the server's NAKs cut off as well, lost packets are never
		// sent again and the server skips them once the latency has passed.
		naks := fmt.Sprintf("INPUT -p udp --sport %d -j DROP", relay)
		pubNS.exec(t, append([]string{"iptables", "-A"}, strings.Fields(naks)...)...)
		w.waitAbove(t, "srtwhep_srt_packets_dropped_total", "path", "live/lossy")
		// The pictures those packets belonged to are skipped, and blamed
		// on SRT's latency rather than on the stream.
		w.waitAbove(t, "srtwhep_path_frames_dropped_total", "path", "live/lossy", "reason", "srt_late")
		pubNS.exec(t, append([]string{"iptables", "-D"}, strings.Fields(naks)...)...)
	})

	t.Run("b-frames", func(t *testing.T) {
		w.waitAbove(t, "srtwhep_path_frames_dropped_total", "path", "live/bframes", "reason", "bframes")
	})

	t.Run("video transcoded", func(t *testing.T) {
		w.waitAbove(t, "srtwhep_path_video_transcoded_frames_total", "path", "live/tc")
		w.waitAbove(t, "srtwhep_path_video_transcode_cpu_seconds_total", "path", "live/tc")
	})

	t.Run("broken TS", func(t *testing.T) {
		sendCorruptedTS(t, ts)
		// The SRT series exist while the connection does, which is until
		// this subtest ends.
		w.waitAbove(t, "srtwhep_srt_decode_errors_total", "path", "live/garbage")
		w.waitAbove(t, "srtwhep_path_frames_dropped_total", "path", "live/garbage", "reason", "decode_error")
		w.waitAbove(t, "srtwhep_path_audio_errors_total", "path", "live/garbage")
	})

	t.Run("whep rejections and failed handshakes", func(t *testing.T) {
		url := func(path string) string { return ts.httpURL("/" + path + "/whep") }
		post := func(path, body string, want int) {
			t.Helper()
			if code, _, resp := request(t, http.MethodPost, url(path), "", "application/sdp", body); code != want {
				t.Errorf("POST %s: %d %q, want %d", path, code, resp, want)
			}
		}
		offer := offerSDP(t)
		post("live/idle", offer, http.StatusConflict)
		w.waitAbove(t, "srtwhep_webrtc_rejected_total", "reason", "no_publisher")
		post("live/m", "v=0 but not SDP", http.StatusBadRequest)
		w.waitAbove(t, "srtwhep_webrtc_rejected_total", "reason", "bad_offer")

		// Caps are live: lower them under the two viewers of live/m.
		running := ts.config()
		capped := *running
		capped.Paths = maps.Clone(running.Paths)
		capped.Paths["live/m"] = config.Path{MaxReaders: 1}
		ts.apply(&capped)
		post("live/m", offer, http.StatusServiceUnavailable)
		w.waitAbove(t, "srtwhep_webrtc_rejected_total", "reason", "reader_cap")
		full := *running
		full.Readers.MaxTotal = 1
		ts.apply(&full)
		post("live/m", offer, http.StatusServiceUnavailable)
		w.waitAbove(t, "srtwhep_webrtc_rejected_total", "reason", "server_full")
		ts.apply(running)

		// An offer whose peer is gone before ICE: answered (201), it holds
		// the only pending slot until the ICE start timeout fails it.
		gone := testkit.Offer(t, testkit.OfferOptions{Codecs: h264Only})
		if err := gone.PC.Close(); err != nil {
			t.Fatal(err)
		}
		post("live/m", gone.SDP, http.StatusCreated)
		post("live/m", offer, http.StatusServiceUnavailable)
		w.waitAbove(t, "srtwhep_webrtc_rejected_total", "reason", "pending_limit")
		w.waitAbove(t, "srtwhep_webrtc_handshakes_failed_total")

		// Another address past its offer bucket (20 at once): 429. Junk
		// bodies cost a token too; bounded, the bucket empties long before.
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 77)}}
		flooder := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
		limited := false
		for range 100 {
			resp, err := flooder.Post(url("live/m"), "text/plain", strings.NewReader("x"))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if limited = resp.StatusCode == http.StatusTooManyRequests; limited {
				break
			}
		}
		if !limited {
			t.Error("100 POSTs at once from one address and never a 429")
		}
		w.waitAbove(t, "srtwhep_webrtc_rejected_total", "reason", "offer_rate")

		// Last: a refusal makes the next attempts from loopback wait.
		post("live/priv", offer, http.StatusUnauthorized)
		w.waitAbove(t, "srtwhep_webrtc_rejected_total", "reason", "auth")
	})

	t.Run("rendition switches", func(t *testing.T) {
		// A session takes its path's ladder as it starts; the ladder is
		// planned at the end of the source's first whole GOP.
		testkit.WaitFor(t, 15*time.Second, "live/rung's first two GOPs", func() bool { return ts.framesIn("live/rung") >= 120 })
		v := ts.dialOne(t, "live/rung")
		v.waitUnits(t, 10, 15*time.Second)
		target := whepclient.LayerLink(v.SessionURL(), v.Links())
		for _, c := range []struct{ layer, direction string }{{"144p", "down"}, {wheplayer.SourceLayer, "up"}} {
			resp, body := testkit.Do(t, http.MethodPost, target, "application/json", fmt.Sprintf(`{"encodingId":%q}`, c.layer), nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("pin %q: %d %s", c.layer, resp.StatusCode, body)
			}
			w.waitAbove(t, "srtwhep_rendition_switches_total", "direction", c.direction)
		}
	})

	t.Run("publisher left", func(t *testing.T) {
		before := w.pathCounters(w.scrape(t), "live/m")
		if err := pubM.Cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		_ = pubM.Wait(t, 10*time.Second) // ffmpeg ends its SRT connection on the way out
		testkit.WaitFor(t, 10*time.Second, "live/m to lose its publisher", func() bool { return !ts.publishing("live/m") })
		fams := w.scrape(t)
		w.wantPublisherUp(t, fams, "live/m", 0)
		after := w.pathCounters(fams, "live/m")
		for k, b := range before {
			if a, ok := after[k]; !ok || a < b {
				t.Errorf("%s of live/m went from %v to %v (present %v) when its publisher left", k, b, a, ok)
			}
		}
	})

	w.wantPublisherUp(t, w.scrape(t), "live/idle", 0)
	w.checkAllMoved(t)
}

// x264AACArgs is x264Args' stream with a 48 kHz AAC tone, for the audio
// counters.
var x264AACArgs = []string{"-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
	"-re", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
	"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-bf", "0", "-g", "60", "-b:v", "500k",
	"-c:a", "aac", "-b:a", "64k"}
