package metrics

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fixedSources is a small but complete picture: a live path with drops and
// an SRT publisher, an idle path without one, and WHEP sessions.
func fixedSources() Sources {
	return Sources{
		Paths: func() []PathSample {
			return []PathSample{
				{
					Path: "live/cam1", PublisherUp: true, Readers: 2,
					IngestBytes: 1_000_000, IngestFrames: 300,
					FramesDropped: map[string]uint64{"slow_reader": 12, "decode_error": 1},
					BytesOut:      2_000_000, PacketsOut: 1800,
					Width: 1280, Height: 720, FPS: 29.97,
					AudioFramesDropped: 4, AudioCodecIn: "AAC", AudioCodecOut: "Opus",
					AudioFramesIn: 430, AudioFramesOut: 500, AudioErrors: 2, AudioTranscodeCPUSeconds: 0.25,
					VideoTranscodedFrames: 300, VideoTranscodeCPUSeconds: 1.5,
				},
				{Path: "live/cam2", IngestBytes: 500, IngestFrames: 10, NoPicture: "no-idr"},
			}
		},
		SRT: func() []SRTSample {
			return []SRTSample{{
				Path: "live/cam1", RTTSeconds: 0.012, ReceiveRateBitsPerSecond: 2.5e6,
				PacketsReceived: 1000, PacketsLost: 3, PacketsRetransmitted: 2, PacketsDropped: 1,
				BytesReceived: 1_316_000, DecodeErrors: 5,
				LatencySeconds: 0.12, RecommendedLatencySeconds: 0.18,
			}}
		},
		WebRTC: func() WebRTCSample {
			return WebRTCSample{
				SessionsByState:    map[string]int{"connecting": 1, "connected": 2},
				HandshakesInFlight: 1, HandshakesFailed: 4, SessionsTotal: 7,
				RejectedTotal: map[string]uint64{"reader_cap": 2, "auth": 1}, UDPDatagrams: 900, UDPRefused: 3, UDPReceiveDrops: 6, NACKResentBytes: 7000, NACKResendDropped: 5,
				SSEStreams: 2, SSEEvents: map[string]uint64{"active": 3, "viewercount": 5},
				ServerLatency: Histogram{UpperBounds: []float64{0.001, 0.01}, Cumulative: []uint64{5, 9}, Count: 10, SumSeconds: 0.05},
				EstimatedBitrate: map[string]Histogram{
					"transport-cc": {UpperBounds: []float64{125_000, 375_000}, Cumulative: []uint64{1, 2}, Count: 3, SumSeconds: 1.15e6},
				},
			}
		},
		Hooks:    func() HookSample { return HookSample{Sent: 40, Dropped: 3, Failed: 1} },
		Panics:   func() map[string]uint64 { return map[string]uint64{"srt_publisher": 1, "viewer_input": 0} },
		Refusals: func() map[string]uint64 { return map[string]uint64{"bframes": 20, "transcode-budget": 1} },
		MediaPlane: func() (MediaPlaneSample, bool) {
			return MediaPlaneSample{
				STUNAnswered: 30, DTLSRecords: 8, RTCPPackets: 120,
				DroppedMalformed: 1, DroppedUnknownUfrag: 2, DroppedBadIntegrity: 3,
				DroppedUnknownAddr: 4, DroppedBadSRTCP: 5, DroppedOther: 6,
				SendSyscalls: 250, SendMessages: 300,
				ConsentAnswers: 7, ConsentFailures: 2,
				TCPEvicted: 2, TCPRefusedPerClient: 7, TCPRefusedGlobal: 1,
			}, true
		},
		Transcode: func() TranscodeSample {
			return TranscodeSample{UsedCores: 0.31, LimitCores: 0.5, Running: 1, Refused: map[string]uint64{"cpu_budget": 4}}
		},
		Build: BuildInfo{Version: "v0.1.0", GoVersion: "go1.26.8"},
	}
}

// helpOf returns the HELP/TYPE header of a metric as the registry writes it.
func helpOf(name string) string {
	for _, d := range defs {
		if d.name == name {
			typ := "gauge"
			switch d.typ {
			case counter:
				typ = "counter"
			case histogram:
				typ = "histogram"
			}
			return "# HELP " + name + " " + d.help + "\n# TYPE " + name + " " + typ + "\n"
		}
	}
	panic("no metric " + name)
}

func TestCollectFixedSamples(t *testing.T) {
	m := New(fixedSources())
	want := helpOf("srtwhep_path_publisher_up") + `srtwhep_path_publisher_up{path="live/cam1"} 1
srtwhep_path_publisher_up{path="live/cam2"} 0
` + helpOf("srtwhep_path_readers") + `srtwhep_path_readers{path="live/cam1"} 2
srtwhep_path_readers{path="live/cam2"} 0
` + helpOf("srtwhep_path_ingest_bytes_total") + `srtwhep_path_ingest_bytes_total{path="live/cam1"} 1e+06
srtwhep_path_ingest_bytes_total{path="live/cam2"} 500
` + helpOf("srtwhep_path_ingest_frames_total") + `srtwhep_path_ingest_frames_total{path="live/cam1"} 300
srtwhep_path_ingest_frames_total{path="live/cam2"} 10
` + helpOf("srtwhep_path_frames_dropped_total") + `srtwhep_path_frames_dropped_total{kind="audio",path="live/cam1",reason="slow_reader"} 4
srtwhep_path_frames_dropped_total{kind="audio",path="live/cam2",reason="slow_reader"} 0
srtwhep_path_frames_dropped_total{kind="video",path="live/cam1",reason="bframes"} 0
srtwhep_path_frames_dropped_total{kind="video",path="live/cam1",reason="congested"} 0
srtwhep_path_frames_dropped_total{kind="video",path="live/cam1",reason="decode_error"} 1
srtwhep_path_frames_dropped_total{kind="video",path="live/cam1",reason="slow_reader"} 12
srtwhep_path_frames_dropped_total{kind="video",path="live/cam1",reason="srt_late"} 0
srtwhep_path_frames_dropped_total{kind="video",path="live/cam2",reason="bframes"} 0
srtwhep_path_frames_dropped_total{kind="video",path="live/cam2",reason="congested"} 0
srtwhep_path_frames_dropped_total{kind="video",path="live/cam2",reason="decode_error"} 0
srtwhep_path_frames_dropped_total{kind="video",path="live/cam2",reason="slow_reader"} 0
srtwhep_path_frames_dropped_total{kind="video",path="live/cam2",reason="srt_late"} 0
` + helpOf("srtwhep_path_audio_info") + `srtwhep_path_audio_info{codec_in="AAC",codec_out="Opus",path="live/cam1"} 1
` + helpOf("srtwhep_path_audio_frames_in_total") + `srtwhep_path_audio_frames_in_total{path="live/cam1"} 430
srtwhep_path_audio_frames_in_total{path="live/cam2"} 0
` + helpOf("srtwhep_path_audio_frames_out_total") + `srtwhep_path_audio_frames_out_total{path="live/cam1"} 500
srtwhep_path_audio_frames_out_total{path="live/cam2"} 0
` + helpOf("srtwhep_path_audio_errors_total") + `srtwhep_path_audio_errors_total{path="live/cam1"} 2
srtwhep_path_audio_errors_total{path="live/cam2"} 0
` + helpOf("srtwhep_path_audio_transcode_cpu_seconds_total") + `srtwhep_path_audio_transcode_cpu_seconds_total{path="live/cam1"} 0.25
srtwhep_path_audio_transcode_cpu_seconds_total{path="live/cam2"} 0
` + helpOf("srtwhep_path_sent_bytes_total") + `srtwhep_path_sent_bytes_total{path="live/cam1"} 2e+06
srtwhep_path_sent_bytes_total{path="live/cam2"} 0
` + helpOf("srtwhep_path_sent_packets_total") + `srtwhep_path_sent_packets_total{path="live/cam1"} 1800
srtwhep_path_sent_packets_total{path="live/cam2"} 0
` + helpOf("srtwhep_path_video_width_pixels") + `srtwhep_path_video_width_pixels{path="live/cam1"} 1280
srtwhep_path_video_width_pixels{path="live/cam2"} 0
` + helpOf("srtwhep_path_video_height_pixels") + `srtwhep_path_video_height_pixels{path="live/cam1"} 720
srtwhep_path_video_height_pixels{path="live/cam2"} 0
` + helpOf("srtwhep_path_video_fps") + `srtwhep_path_video_fps{path="live/cam1"} 29.97
srtwhep_path_video_fps{path="live/cam2"} 0
` + helpOf("srtwhep_path_video_transcoded_frames_total") + `srtwhep_path_video_transcoded_frames_total{path="live/cam1"} 300
srtwhep_path_video_transcoded_frames_total{path="live/cam2"} 0
` + helpOf("srtwhep_path_video_transcode_cpu_seconds_total") + `srtwhep_path_video_transcode_cpu_seconds_total{path="live/cam1"} 1.5
srtwhep_path_video_transcode_cpu_seconds_total{path="live/cam2"} 0
` + helpOf("srtwhep_path_no_picture") + `srtwhep_path_no_picture{path="live/cam2",reason="no-idr"} 1
` + helpOf("srtwhep_publisher_refusals_total") + `srtwhep_publisher_refusals_total{reason="bframes"} 20
srtwhep_publisher_refusals_total{reason="no-h264"} 0
srtwhep_publisher_refusals_total{reason="no-idr"} 0
srtwhep_publisher_refusals_total{reason="no-media"} 0
srtwhep_publisher_refusals_total{reason="no-tables"} 0
srtwhep_publisher_refusals_total{reason="not-mpegts"} 0
srtwhep_publisher_refusals_total{reason="picture-too-large"} 0
srtwhep_publisher_refusals_total{reason="transcode-budget"} 1
srtwhep_publisher_refusals_total{reason="unplayable-profile"} 0
` + helpOf("srtwhep_transcode_cpu_budget_used_cores") + `srtwhep_transcode_cpu_budget_used_cores 0.31
` + helpOf("srtwhep_transcode_cpu_budget_limit_cores") + `srtwhep_transcode_cpu_budget_limit_cores 0.5
` + helpOf("srtwhep_transcode_running") + `srtwhep_transcode_running 1
` + helpOf("srtwhep_transcode_refusals_total") + `srtwhep_transcode_refusals_total{reason="cpu_budget"} 4
srtwhep_transcode_refusals_total{reason="decode_area"} 0
` + helpOf("srtwhep_srt_rtt_seconds") + `srtwhep_srt_rtt_seconds{path="live/cam1"} 0.012
` + helpOf("srtwhep_srt_receive_rate_bytes_per_second") + `srtwhep_srt_receive_rate_bytes_per_second{path="live/cam1"} 312500
` + helpOf("srtwhep_srt_packets_received_total") + `srtwhep_srt_packets_received_total{path="live/cam1"} 1000
` + helpOf("srtwhep_srt_packets_lost_total") + `srtwhep_srt_packets_lost_total{path="live/cam1"} 3
` + helpOf("srtwhep_srt_packets_retransmitted_total") + `srtwhep_srt_packets_retransmitted_total{path="live/cam1"} 2
` + helpOf("srtwhep_srt_packets_dropped_total") + `srtwhep_srt_packets_dropped_total{path="live/cam1"} 1
` + helpOf("srtwhep_srt_received_bytes_total") + `srtwhep_srt_received_bytes_total{path="live/cam1"} 1.316e+06
` + helpOf("srtwhep_srt_decode_errors_total") + `srtwhep_srt_decode_errors_total{path="live/cam1"} 5
` + helpOf("srtwhep_srt_latency_seconds") + `srtwhep_srt_latency_seconds{path="live/cam1"} 0.12
` + helpOf("srtwhep_srt_recommended_latency_seconds") + `srtwhep_srt_recommended_latency_seconds{path="live/cam1"} 0.18
` + helpOf("srtwhep_webrtc_sessions") + `srtwhep_webrtc_sessions{state="connected"} 2
srtwhep_webrtc_sessions{state="connecting"} 1
` + helpOf("srtwhep_webrtc_handshakes_in_flight") + `srtwhep_webrtc_handshakes_in_flight 1
` + helpOf("srtwhep_webrtc_nack_resend_dropped_total") + `srtwhep_webrtc_nack_resend_dropped_total 5
` + helpOf("srtwhep_webrtc_nack_resent_bytes_total") + `srtwhep_webrtc_nack_resent_bytes_total 7000
` + helpOf("srtwhep_webrtc_offers_pending") + `srtwhep_webrtc_offers_pending 0
` + helpOf("srtwhep_webrtc_handshakes_failed_total") + `srtwhep_webrtc_handshakes_failed_total 4
` + helpOf("srtwhep_webrtc_sessions_total") + `srtwhep_webrtc_sessions_total 7
` + helpOf("srtwhep_webrtc_rejected_total") + `srtwhep_webrtc_rejected_total{reason="auth"} 1
srtwhep_webrtc_rejected_total{reason="bad_offer"} 0
srtwhep_webrtc_rejected_total{reason="handshake_limit"} 0
srtwhep_webrtc_rejected_total{reason="no_publisher"} 0
srtwhep_webrtc_rejected_total{reason="offer_rate"} 0
srtwhep_webrtc_rejected_total{reason="pending_limit"} 0
srtwhep_webrtc_rejected_total{reason="reader_cap"} 2
srtwhep_webrtc_rejected_total{reason="server_full"} 0
` + helpOf("srtwhep_webrtc_udp_datagrams_refused_total") + `srtwhep_webrtc_udp_datagrams_refused_total 3
` + helpOf("srtwhep_webrtc_udp_receive_drops_total") + `srtwhep_webrtc_udp_receive_drops_total 6
` + helpOf("srtwhep_webrtc_udp_datagrams_sent_total") + `srtwhep_webrtc_udp_datagrams_sent_total 900
` + helpOf("srtwhep_sse_streams") + `srtwhep_sse_streams 2
` + helpOf("srtwhep_sse_events_total") + `srtwhep_sse_events_total{type="active"} 3
srtwhep_sse_events_total{type="inactive"} 0
srtwhep_sse_events_total{type="layers"} 0
srtwhep_sse_events_total{type="reconnect"} 0
srtwhep_sse_events_total{type="viewercount"} 5
` + helpOf("srtwhep_webrtc_received_datagrams_total") + `srtwhep_webrtc_received_datagrams_total{kind="consent"} 7
srtwhep_webrtc_received_datagrams_total{kind="dtls"} 8
srtwhep_webrtc_received_datagrams_total{kind="rtcp"} 120
srtwhep_webrtc_received_datagrams_total{kind="stun"} 30
` + helpOf("srtwhep_webrtc_received_dropped_total") + `srtwhep_webrtc_received_dropped_total{reason="bad_integrity"} 3
srtwhep_webrtc_received_dropped_total{reason="bad_srtcp"} 5
srtwhep_webrtc_received_dropped_total{reason="malformed"} 1
srtwhep_webrtc_received_dropped_total{reason="other"} 6
srtwhep_webrtc_received_dropped_total{reason="unknown_addr"} 4
srtwhep_webrtc_received_dropped_total{reason="unknown_ufrag"} 2
` + helpOf("srtwhep_webrtc_send_syscalls_total") + `srtwhep_webrtc_send_syscalls_total 250
` + helpOf("srtwhep_webrtc_send_messages_total") + `srtwhep_webrtc_send_messages_total 300
` + helpOf("srtwhep_webrtc_consent_failures_total") + `srtwhep_webrtc_consent_failures_total 2
` + helpOf("srtwhep_webrtc_ice_tcp_refused_total") + `srtwhep_webrtc_ice_tcp_refused_total{reason="global"} 1
srtwhep_webrtc_ice_tcp_refused_total{reason="per_client"} 7
` + helpOf("srtwhep_webrtc_ice_tcp_evicted_total") + `srtwhep_webrtc_ice_tcp_evicted_total 2
` + helpOf("srtwhep_server_latency_seconds") + `srtwhep_server_latency_seconds_bucket{le="0.001"} 5
srtwhep_server_latency_seconds_bucket{le="0.01"} 9
srtwhep_server_latency_seconds_bucket{le="+Inf"} 10
srtwhep_server_latency_seconds_sum 0.05
srtwhep_server_latency_seconds_count 10
` + helpOf("srtwhep_viewer_estimated_bandwidth_bytes_per_second") + `srtwhep_viewer_estimated_bandwidth_bytes_per_second_bucket{source="transport-cc",le="125000"} 1
srtwhep_viewer_estimated_bandwidth_bytes_per_second_bucket{source="transport-cc",le="375000"} 2
srtwhep_viewer_estimated_bandwidth_bytes_per_second_bucket{source="transport-cc",le="+Inf"} 3
srtwhep_viewer_estimated_bandwidth_bytes_per_second_sum{source="transport-cc"} 1.15e+06
srtwhep_viewer_estimated_bandwidth_bytes_per_second_count{source="transport-cc"} 3
` + helpOf("srtwhep_hook_events_total") + `srtwhep_hook_events_total{result="dropped"} 3
srtwhep_hook_events_total{result="failed"} 1
srtwhep_hook_events_total{result="sent"} 40
` + helpOf("srtwhep_panics_total") + `srtwhep_panics_total{where="srt_publisher"} 1
srtwhep_panics_total{where="viewer_input"} 0
` + helpOf("srtwhep_build_info") + `srtwhep_build_info{goversion="go1.26.8",version="v0.1.0"} 1
`
	if err := testutil.CollectAndCompare(m.col, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	// The registry as a whole (with the process and Go collectors) must
	// hold the same srtwhep series.
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), defNames()...); err != nil {
		t.Fatal(err)
	}
}

func TestCollectNilSourcesOnlyBuildInfo(t *testing.T) {
	m := New(Sources{})
	if n := testutil.CollectAndCount(m.col); n != 1 {
		t.Fatalf("collected %d series with no sources, want only srtwhep_build_info", n)
	}
	want := helpOf("srtwhep_build_info") +
		`srtwhep_build_info{goversion="` + runtime.Version() + `",version="unknown"} 1
`
	if err := testutil.CollectAndCompare(m.col, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

// A media plane source that reports no plane yet (a server not yet
// bound) exports no media plane series, not zeros.
func TestCollectMediaPlaneAbsent(t *testing.T) {
	m := New(Sources{MediaPlane: func() (MediaPlaneSample, bool) {
		return MediaPlaneSample{STUNAnswered: 5, TCPRefusedPerClient: 3}, false
	}})
	got := gatheredNames(t, m)
	for _, name := range []string{"srtwhep_webrtc_received_datagrams_total", "srtwhep_webrtc_received_dropped_total",
		"srtwhep_webrtc_send_syscalls_total", "srtwhep_webrtc_send_messages_total", "srtwhep_webrtc_consent_failures_total",
		"srtwhep_webrtc_ice_tcp_refused_total", "srtwhep_webrtc_ice_tcp_evicted_total"} {
		if got[name] {
			t.Errorf("%s exported although the source reports no media plane", name)
		}
	}
	if n := testutil.CollectAndCount(m.col); n != 1 {
		t.Errorf("collected %d series, want only srtwhep_build_info", n)
	}
}

// Duplicate paths (a publisher replaced while the old one closes) and
// non-UTF-8 stream IDs must not fail the scrape.
func TestCollectDuplicateAndInvalidPaths(t *testing.T) {
	bad := "live/\xffcam"
	m := New(Sources{
		Paths: func() []PathSample {
			return []PathSample{
				{Path: "live/a", Readers: 1},
				{Path: "live/a", Readers: 9},
				{Path: bad, Readers: 3},
			}
		},
		SRT: func() []SRTSample {
			return []SRTSample{{Path: "live/a", PacketsLost: 1}, {Path: "live/a", PacketsLost: 2}}
		},
		WebRTC: func() WebRTCSample {
			return WebRTCSample{SessionsByState: map[string]int{"connected": 1, "con\xffnected": 2}}
		},
	})
	if _, err := m.Registry().Gather(); err != nil {
		t.Fatalf("gather: %v", err)
	}
	want := helpOf("srtwhep_path_readers") + `srtwhep_path_readers{path="live/a"} 1
srtwhep_path_readers{path="live/` + "\uFFFD" + `cam"} 3
` + helpOf("srtwhep_srt_packets_lost_total") + `srtwhep_srt_packets_lost_total{path="live/a"} 1
` + helpOf("srtwhep_webrtc_sessions") + `srtwhep_webrtc_sessions{state="connected"} 1
srtwhep_webrtc_sessions{state="connecting"} 0
srtwhep_webrtc_sessions{state="con` + "\uFFFD" + `nected"} 2
`
	if err := testutil.CollectAndCompare(m.col, strings.NewReader(want),
		"srtwhep_path_readers", "srtwhep_srt_packets_lost_total", "srtwhep_webrtc_sessions"); err != nil {
		t.Fatal(err)
	}
}

func TestLint(t *testing.T) {
	m := New(fixedSources())
	problems, err := testutil.CollectAndLint(m.col)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	// Every defined metric must be exercised by the fixed samples, or the
	// lint above would not have seen it.
	got := gatheredNames(t, m)
	for _, name := range defNames() {
		if !got[name] {
			t.Errorf("%s is defined but not produced by the fixed samples", name)
		}
	}
	// Linting through the real registry catches clashes with the process
	// and Go collectors; their own names are theirs to fix, not ours.
	problems, err = testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "srtwhep_") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
}

func defNames() []string {
	names := make([]string, 0, len(defs))
	for _, d := range defs {
		names = append(names, d.name)
	}
	return names
}

func gatheredNames(t *testing.T, m *Metrics) map[string]bool {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	got := make(map[string]bool, len(mfs))
	for _, mf := range mfs {
		got[mf.GetName()] = true
	}
	return got
}
