package metrics

import "github.com/prometheus/client_golang/prometheus"

// def is one srtwhep metric. The table below is the single place names,
// help texts and labels are decided; the dashboard test checks against it.
type def struct {
	name   string
	help   string
	typ    prometheus.ValueType
	labels []string
}

const (
	gauge   = prometheus.GaugeValue
	counter = prometheus.CounterValue
	// histogram marks a def emitted with NewConstHistogram; the value
	// type is never used for it.
	histogram = prometheus.UntypedValue
)

var (
	lPath   = []string{"path"}
	lReason = []string{"path", "reason", "kind"}
)

// Indexes into defs; order must match.
const (
	pathPublisherUp = iota
	pathReaders
	pathIngestBytes
	pathIngestFrames
	pathFramesDropped
	pathSentBytes
	pathSentPackets
	pathWidth
	pathHeight
	pathFPS
	pathAudioInfo
	pathAudioFramesIn
	pathAudioFramesOut
	pathAudioErrors
	pathAudioCPU
	pathVideoTranscoded
	pathVideoCPU
	pathNoPicture
	publisherRefusals
	transcodeUsed
	transcodeLimit
	transcodeRunning
	transcodeRefused
	srtRTT
	srtRecvRate
	srtPktsRecv
	srtPktsLost
	srtPktsRetrans
	srtPktsDropped
	srtBytesRecv
	srtDecodeErrors
	srtLatency
	srtRecommendedLatency
	webrtcSessions
	webrtcHandshakesInFlight
	webrtcOffersPending
	webrtcHandshakesFailed
	webrtcSessionsTotal
	webrtcRejected
	webrtcUDPDatagrams
	webrtcUDPRefused
	webrtcUDPReceiveDrops
	webrtcNACKResentBytes
	webrtcNACKResendDropped
	sseStreams
	sseEvents
	webrtcReceived
	webrtcReceiveDropped
	webrtcSendSyscalls
	webrtcSendMessages
	webrtcConsentFailures
	webrtcTCPRefused
	webrtcTCPEvicted
	serverLatency
	viewerEstimatedBitrate
	hookEvents
	panicsCaught
	buildInfo
	numDefs
)

var defs = [numDefs]def{
	pathPublisherUp: {"srtwhep_path_publisher_up",
		"1 if an SRT publisher is currently feeding the path, 0 if the path exists without one.", gauge, lPath},
	pathReaders: {"srtwhep_path_readers",
		"WHEP viewers currently attached to the path.", gauge, lPath},
	pathIngestBytes: {"srtwhep_path_ingest_bytes_total",
		"Bytes of H.264 access units the publisher wrote into the path (elementary stream, without TS/SRT overhead).", counter, lPath},
	pathIngestFrames: {"srtwhep_path_ingest_frames_total",
		"Access units (video frames) the publisher wrote into the path.", counter, lPath},
	pathFramesDropped: {"srtwhep_path_frames_dropped_total",
		"Frames not delivered, by reason and kind (video, audio): slow_reader = a viewer's queue was full (video then waits for the next IDR; audio is kept while there is room), congested = a viewer's RTCP receiver reports showed its link losing a fifth of the video or more twice in a row, so its video skipped to the next IDR (its link is narrower than the stream), decode_error = broken input, srt_late = skipped to the next IDR because SRT dropped packets that arrived after srt.latency (raise it: see srtwhep_srt_recommended_latency_seconds), bframes = input with B-frames, which WebRTC cannot play.", counter, lReason},
	pathSentBytes: {"srtwhep_path_sent_bytes_total",
		"RTP payload bytes sent to the path's viewers, including viewers that have left.", counter, lPath},
	pathSentPackets: {"srtwhep_path_sent_packets_total",
		"RTP packets sent to the path's viewers, including viewers that have left.", counter, lPath},
	pathWidth: {"srtwhep_path_video_width_pixels",
		"Width of the published video from its SPS; 0 until the first SPS arrives.", gauge, lPath},
	pathHeight: {"srtwhep_path_video_height_pixels",
		"Height of the published video from its SPS; 0 until the first SPS arrives.", gauge, lPath},
	pathFPS: {"srtwhep_path_video_fps",
		"Frame rate of the published video in frames per second; 0 while unknown.", gauge, lPath},
	pathAudioInfo: {"srtwhep_path_audio_info",
		"1 for a path with audio; codec_in is what the publisher sends (AAC, MPEG-1 Audio, Opus), codec_out what viewers get (Opus).", gauge, []string{"path", "codec_in", "codec_out"}},
	pathAudioFramesIn: {"srtwhep_path_audio_frames_in_total",
		"Coded audio frames read from the publisher's first audio track.", counter, lPath},
	pathAudioFramesOut: {"srtwhep_path_audio_frames_out_total",
		"Opus frames handed to the path's viewers (transcoded once per path, or passed through).", counter, lPath},
	pathAudioErrors: {"srtwhep_path_audio_errors_total",
		"Audio frames skipped as undecodable or out of time; video is never affected.", counter, lPath},
	pathAudioCPU: {"srtwhep_path_audio_transcode_cpu_seconds_total",
		"CPU time spent decoding, resampling and encoding the path's audio to Opus.", counter, lPath},
	pathVideoTranscoded: {"srtwhep_path_video_transcoded_frames_total",
		"Pictures the path's video transcoder encoded to H.264 (video: auto for streams browsers cannot play, or video: transcode); the log says why it runs.", counter, lPath},
	pathVideoCPU: {"srtwhep_path_video_transcode_cpu_seconds_total",
		"CPU time of the path's video transcoder thread: decoding, pixel-format conversion and libx264 encoding.", counter, lPath},
	pathNoPicture: {"srtwhep_path_no_picture",
		"1 while the path's live publisher sends nothing a browser can decode (reason no-idr: no IDR with SPS/PPS within 5 s of its first video, usually GStreamer's mpegtsmux without alignment=7; unplayable-profile: 10-bit or 4:2:2/4:4:4 with video: passthrough; transcode-budget, picture-too-large: the transcode it needs was refused by transcode.maxCPUPercent or transcode.maxDecodeArea); viewers get 409 with the fix meanwhile.", gauge, []string{"path", "reason"}},
	publisherRefusals: {"srtwhep_publisher_refusals_total",
		"Publishers refused, or warned about, for their stream, by reason (bframes, no-h264, not-mpegts with video: passthrough or always; unplayable-profile, no-idr, transcode-budget, picture-too-large while they stream); /v1/paths has the last one per path and the fix.", counter, []string{"reason"}},
	transcodeUsed: {"srtwhep_transcode_cpu_budget_used_cores",
		"Cores the running video transcoders hold on the transcode CPU budget: each its measured share (thread CPU time over the last seconds), or its estimate until measured.", gauge, nil},
	transcodeLimit: {"srtwhep_transcode_cpu_budget_limit_cores",
		"The transcode CPU budget in cores: transcode.maxCPUPercent of the CPU the server may use; 0 = no limit.", gauge, nil},
	transcodeRunning: {"srtwhep_transcode_running",
		"Video transcoders running (each holding part of the transcode CPU budget).", gauge, nil},
	transcodeRefused: {"srtwhep_transcode_refusals_total",
		"Video transcodes refused, by reason: cpu_budget = its cost does not fit transcode.maxCPUPercent, decode_area = its pictures are larger than transcode.maxDecodeArea. A path whose video needs the transcode tries again at each IDR (each try counts); its viewers get 409 with the reason.", counter, []string{"reason"}},
	srtRTT: {"srtwhep_srt_rtt_seconds",
		"Round-trip time to the SRT publisher as smoothed by libsrt.", gauge, lPath},
	srtRecvRate: {"srtwhep_srt_receive_rate_bytes_per_second",
		"Receive rate from the SRT publisher as estimated by libsrt, in bytes per second (multiply by 8 for bit/s).", gauge, lPath},
	srtPktsRecv: {"srtwhep_srt_packets_received_total",
		"SRT data packets received from the publisher on the current connection.", counter, lPath},
	srtPktsLost: {"srtwhep_srt_packets_lost_total",
		"SRT data packets detected as lost on the current connection (before retransmission).", counter, lPath},
	srtPktsRetrans: {"srtwhep_srt_packets_retransmitted_total",
		"SRT data packets that arrived as retransmissions on the current connection.", counter, lPath},
	srtPktsDropped: {"srtwhep_srt_packets_dropped_total",
		"SRT data packets dropped by libsrt because they arrived too late to play; raise the SRT latency if this grows.", counter, lPath},
	srtBytesRecv: {"srtwhep_srt_received_bytes_total",
		"SRT payload bytes received from the publisher on the current connection.", counter, lPath},
	srtDecodeErrors: {"srtwhep_srt_decode_errors_total",
		"MPEG-TS/H.264 decode errors in the publisher's stream on the current connection.", counter, lPath},
	srtLatency: {"srtwhep_srt_latency_seconds",
		"SRT receive latency in effect for the publisher: the larger of srt.latency and the publisher's own latency setting.", gauge, lPath},
	srtRecommendedLatency: {"srtwhep_srt_recommended_latency_seconds",
		"SRT latency the publisher's RTT and loss call for (SRT's rule: 3 to 6 times the RTT for 1 to 10 % loss, more once late packets were dropped); a latency below it makes viewers skip frames.", gauge, lPath},
	webrtcSessions: {"srtwhep_webrtc_sessions",
		"WHEP sessions by state: connecting = ICE/DTLS in progress, connected = receiving media.", gauge, []string{"state"}},
	webrtcHandshakesInFlight: {"srtwhep_webrtc_handshakes_in_flight",
		"WHEP connections whose viewer has started ICE and that are not connected yet (the DTLS work http.maxHandshakes bounds).", gauge, nil},
	webrtcOffersPending: {"srtwhep_webrtc_offers_pending",
		"WHEP offers answered whose viewer has not started ICE yet (bounded by http.maxPendingOffers; closed after 2 s without an ICE check).", gauge, nil},
	webrtcHandshakesFailed: {"srtwhep_webrtc_handshakes_failed_total",
		"WHEP sessions that never reached the connected state (ICE or DTLS failure or timeout).", counter, nil},
	webrtcSessionsTotal: {"srtwhep_webrtc_sessions_total",
		"WHEP sessions created since the process started.", counter, nil},
	webrtcRejected: {"srtwhep_webrtc_rejected_total",
		"WHEP offers refused, by reason: reader_cap = path at its viewer cap, server_full = server at its session cap, no_publisher = nothing published on the path, bad_offer = unusable SDP, auth = refused by the access policy, handshake_limit = viewer closed because its ICE started while every handshake slot was taken, offer_rate = client over its offer rate (429), pending_limit = too many answered offers waiting for ICE.", counter, []string{"reason"}},
	webrtcUDPDatagrams: {"srtwhep_webrtc_udp_datagrams_sent_total",
		"Datagrams the shared WebRTC media socket handed to the kernel.", counter, nil},
	webrtcUDPRefused: {"srtwhep_webrtc_udp_datagrams_refused_total",
		"Datagrams the kernel refused on the shared WebRTC media socket (send buffer full); viewers lose them. Raise net.core.wmem_max if this grows.", counter, nil},
	webrtcUDPReceiveDrops: {"srtwhep_webrtc_udp_receive_drops_total",
		"Datagrams the kernel dropped on their way into the shared WebRTC media socket (receive buffer full: viewers' RTCP, NACKs, keepalives). Raise webrtc.socketBuffer and net.core.rmem_max if this grows.", counter, nil},
	webrtcNACKResentBytes: {"srtwhep_webrtc_nack_resent_bytes_total",
		"Bytes resent to viewers on their NACKs, headers included.", counter, nil},
	webrtcNACKResendDropped: {"srtwhep_webrtc_nack_resend_dropped_total",
		"Packets viewers NACKed that were not resent: past the viewer's retransmission budget (a quarter of what it is sent) or the server's (webrtc.maxResendBitrate), asked for again within a round trip, or no longer in the history. A steady rise from one viewer is a NACK flood; raise webrtc.maxResendBitrate if lossy viewers are refused.", counter, nil},
	sseStreams: {"srtwhep_sse_streams",
		"WHEP server-sent event streams open (viewers told when the stream is live, how many watch, and when to reconnect).", gauge, nil},
	sseEvents: {"srtwhep_sse_events_total",
		"Server-sent events written to viewers, by type: active, inactive, reconnect, viewercount.", counter, []string{"type"}},
	webrtcReceived: {"srtwhep_webrtc_received_datagrams_total",
		"Datagrams from viewers that the media plane handled, by kind: stun = ICE connectivity and consent checks answered, dtls = DTLS handshake records, rtcp = SRTCP packets (receiver reports, NACKs, keyframe requests) decrypted, consent = answers to the server's own consent checks (RFC 7675), which prove that a viewer's address wants its media. rtcp flat while viewers are connected means their reports do not reach the server, so NACKs and congestion control are blind.", counter, []string{"kind"}},
	webrtcReceiveDropped: {"srtwhep_webrtc_received_dropped_total",
		"Datagrams the media plane read and threw away, by reason: malformed = not STUN, DTLS or RTP/RTCP, or truncated (scanners, stray traffic); unknown_ufrag = ICE check for no current viewer (one that left or restarted ICE; a steady stream is a probe); bad_integrity = ICE check whose MESSAGE-INTEGRITY or FINGERPRINT failed; unknown_addr = DTLS or RTCP from an address no ICE check validated (a NAT that changed the viewer's port; the viewer's next check repairs it); bad_srtcp = SRTCP that failed authentication or replay checks; other = valid but unwanted (RTP from a viewer, STUN responses, RTCP before the keys, a full handshake queue). bad_integrity or bad_srtcp growing means forged or corrupted packets reach the media port; unknown_addr growing while viewers fail points at a middlebox rewriting ports.", counter, []string{"reason"}},
	webrtcSendSyscalls: {"srtwhep_webrtc_send_syscalls_total",
		"System calls the media plane made to send media (sendmmsg, and one writev per frame for ICE-TCP viewers). srtwhep_webrtc_udp_datagrams_sent_total divided by this is the datagrams per call.", counter, nil},
	webrtcSendMessages: {"srtwhep_webrtc_send_messages_total",
		"Messages the media plane's system calls carried: UDP GSO groups (packets of one frame for one viewer, sent as one message) and ICE-TCP frames. srtwhep_webrtc_udp_datagrams_sent_total divided by this is the datagrams per GSO message: near 1 while frames span several packets means GSO batching is off (the kernel or network device refused UDP GSO) and each packet costs its own trip through the kernel.", counter, nil},
	webrtcConsentFailures: {"srtwhep_webrtc_consent_failures_total",
		"Consent checks (RFC 7675) that went unanswered on the media plane: an address a viewer nominated that never answered the server's check, so got no media (a viewer spoofing a third party's address to aim its stream there, or a path that broke while moving), and viewers ended because their media address answered none of the server's consent checks for 30 s (RFC 7675: what a viewer sends proves nothing, since it may spoof its source).", counter, nil},
	webrtcTCPRefused: {"srtwhep_webrtc_ice_tcp_refused_total",
		"ICE-TCP connections the media plane closed at accept, by reason: per_client = over webrtc.maxTCPPerClient from one address (per /64 for IPv6), global = over the 4,096 open at once. per_client growing while ICE-TCP viewers fail means many of them share one address (raise the cap); otherwise it is a flood, and the log names the client once a second.", counter, []string{"reason"}},
	webrtcTCPEvicted: {"srtwhep_webrtc_ice_tcp_evicted_total",
		"Validated ICE-TCP connections the media plane closed because a newer address of the same viewer took their place (a viewer keeps eight).", counter, nil},
	serverLatency: {"srtwhep_server_latency_seconds",
		"The server's own share of the delay, per video frame and viewer: from the demuxer having the whole frame from SRT to the write of its last RTP packet (the cached GOP a new viewer starts with is left out).", histogram, nil},
	viewerEstimatedBitrate: {"srtwhep_viewer_estimated_bandwidth_bytes_per_second",
		"The viewers' bandwidth estimates (bytes per second; times 8 for the bit rate) at scrape time, one observation per viewer that has one, by source: transport-cc = delay and loss from the viewer's transport-wide feedback (Google Congestion Control), receiver-reports = loss from its RTCP receiver reports (a viewer that did not negotiate transport-cc). Viewers below the stream's bitrate cannot play it whole.", histogram, []string{"source"}},
	hookEvents: {"srtwhep_hook_events_total",
		"Events for hooks.url by result: sent = answered 2xx, failed = given up after retries, dropped = never sent because the queue (hooks.queueSize) was full or the server was stopping. Media never waits for the hook.", counter, []string{"result"}},
	panicsCaught: {"srtwhep_panics_total",
		"Panics caught in one connection's goroutine, by where (srt_publisher, srt_reader, edge_pull, viewer_handshake, viewer_sender, viewer_input): the connection was closed, the server went on; the log has the stack. Any is a bug to report.", counter, []string{"where"}},
	buildInfo: {"srtwhep_build_info",
		"Always 1; the labels tell the srtwhep version and the Go version it was built with.", gauge, []string{"version", "goversion"}},
}
