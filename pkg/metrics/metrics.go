// Package metrics owns srtwhep's Prometheus registry, metric names and help
// texts.
//
// Producers (ingest, whep) keep plain atomic counters and describe
// themselves in the sample structs below; the composition root hands their
// methods over as source functions. Nothing here runs on the media path:
// every value is read when Prometheus scrapes. Which paths appear is the
// producers' decision (ingest keeps configured and recently live paths with
// publisher_up 0). The package imports no other srtwhep package, which
// keeps it cgo-free and out of every import cycle.
package metrics

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// PathSample is the state of one hub path at scrape time.
type PathSample struct {
	Path        string
	PublisherUp bool
	Readers     int

	// Counters: they only grow for the life of the path.
	IngestBytes, IngestFrames uint64
	// FramesDropped maps a reason (see DropReasons; others are passed
	// through) to the number of video frames dropped for it;
	// AudioFramesDropped is the audio frames slow readers lost.
	FramesDropped      map[string]uint64
	AudioFramesDropped uint64
	// BytesOut and PacketsOut sum every viewer of the path, including
	// viewers that already left, so the counters never go backwards.
	BytesOut, PacketsOut uint64

	// Video parameters; 0 means not known yet.
	Width, Height int
	FPS           float64

	// Audio: the codec read from the publisher and the one sent to viewers
	// ("" without audio); coded frames read, Opus frames sent on, frames
	// skipped as broken, and the transcoder's CPU time.
	AudioCodecIn, AudioCodecOut   string
	AudioFramesIn, AudioFramesOut uint64
	AudioErrors                   uint64
	AudioTranscodeCPUSeconds      float64

	// Video transcoding (video: auto or transcode): pictures encoded for
	// the path and the transcoder's CPU time; 0 while it passes through.
	VideoTranscodedFrames    uint64
	VideoTranscodeCPUSeconds float64

	// NoPicture is the reason the live publisher's stream has no
	// decodable picture (no-idr, unplayable-profile); "" while it has.
	NoPicture string
}

// SRTSample is the libsrt view of one connected SRT publisher.
type SRTSample struct {
	Path       string
	RTTSeconds float64
	// ReceiveRateBitsPerSecond is exported in bytes per second, the base
	// unit, as srtwhep_srt_receive_rate_bytes_per_second.
	ReceiveRateBitsPerSecond float64

	// Counters for the life of the connection.
	PacketsReceived, PacketsLost, PacketsRetransmitted, PacketsDropped, BytesReceived uint64
	DecodeErrors                                                                      uint64

	// LatencySeconds is the receive latency in effect on the connection;
	// RecommendedLatencySeconds what its RTT and loss call for.
	LatencySeconds, RecommendedLatencySeconds float64
}

// Histogram is a histogram's state at scrape time, in Prometheus' form.
type Histogram struct {
	UpperBounds []float64 // ascending, in the metric's unit; +Inf is implied
	Cumulative  []uint64  // observations <= the bound at the same index
	Count       uint64    // every observation, those above the last bound included
	SumSeconds  float64
}

// WebRTCSample is the WHEP server's state at scrape time.
type WebRTCSample struct {
	// SessionsByState maps a state (see SessionStates) to its session count.
	SessionsByState    map[string]int
	HandshakesInFlight int
	// OffersPending are the offers answered whose viewer has not started
	// ICE yet.
	OffersPending int
	// Counters for the life of the process.
	HandshakesFailed, SessionsTotal uint64
	// RejectedTotal maps a reason (see RejectReasons) to the number of WHEP
	// offers refused for it.
	RejectedTotal map[string]uint64
	// UDPDatagrams and UDPRefused count the shared media socket's sends
	// and the kernel's refusals.
	UDPDatagrams, UDPRefused uint64
	// UDPReceiveDrops is the kernel's drop count on the way in.
	UDPReceiveDrops uint64
	// NACKResentBytes are the bytes resent on viewers' NACKs,
	// NACKResendDropped the NACKed packets not resent (past a viewer's or
	// the server's retransmission budget, or asked again within a round
	// trip).
	NACKResentBytes, NACKResendDropped uint64
	// ServerLatency is the server's own share of the delay: a whole video
	// frame from SRT to its last RTP packet written to a viewer. Not
	// exported while it has no buckets.
	ServerLatency Histogram
	// EstimatedBitrate are the viewers' bandwidth estimates now (bytes/s;
	// SumSeconds holds their sum), by the source of each (see
	// EstimateSources).
	EstimatedBitrate map[string]Histogram
	// SSEStreams are the open server-sent event streams, SSEEvents the
	// events written to them by type (see SSEEventTypes).
	SSEStreams int
	SSEEvents  map[string]uint64
}

// EstimateSources are the srtwhep_viewer_estimated_bandwidth_bytes_per_second
// source labels.
var EstimateSources = []string{"transport-cc", "receiver-reports"}

// SSEEventTypes are the srtwhep_sse_events_total types, exported at 0
// before the first.
var SSEEventTypes = []string{"active", "inactive", "reconnect", "viewercount"}

// MediaPlaneSample counts, for the life of the process, what srtwhep's
// media plane read from viewers on its shared
// socket (and ICE-TCP connections) and how it sent media. Every datagram
// read is either handled under one kind or dropped under one reason.
type MediaPlaneSample struct {
	// Handled: ICE checks answered, DTLS records taken, SRTCP decrypted.
	STUNAnswered, DTLSRecords, RTCPPackets uint64
	// Dropped, one field per srtwhep_webrtc_received_dropped_total reason.
	DroppedMalformed, DroppedUnknownUfrag, DroppedBadIntegrity uint64
	DroppedUnknownAddr, DroppedBadSRTCP, DroppedOther          uint64
	// SendSyscalls are the system calls that sent media, SendMessages the
	// messages they carried (UDP GSO groups, ICE-TCP frame runs).
	SendSyscalls, SendMessages uint64
	// ConsentAnswers are viewers' answers to the server's own consent
	// checks (RFC 7675), a handled kind; ConsentFailures are nominated
	// addresses that never answered (and got no media) plus viewers ended
	// because their media address stopped answering.
	ConsentAnswers, ConsentFailures uint64
	// TCPEvicted are validated ICE-TCP connections closed because a newer
	// address of the same viewer replaced them.
	TCPEvicted uint64
	// TCPRefusedPerClient and TCPRefusedGlobal are the ICE-TCP
	// connections closed at accept: over webrtc.maxTCPPerClient from one
	// client, and over the server's cap.
	TCPRefusedPerClient, TCPRefusedGlobal uint64
}

// HookSample counts the events posted to hooks.url for the life of the
// process: Sent were answered 2xx; Failed were given up after their
// retries; Dropped never left the queue (it was full, or the server was
// stopping).
type HookSample struct {
	Sent, Dropped, Failed uint64
}

// TranscodeSample is the transcode CPU budget's account: what the
// running transcoders hold (measured, or estimated until measured) and
// the limit, in cores; the transcoders holding it; and the transcodes
// refused for the process's life, by reason (see TranscodeRefusalReasons).
type TranscodeSample struct {
	UsedCores, LimitCores float64
	Running               int
	Refused               map[string]uint64
}

// BuildInfo labels the srtwhep_build_info series.
type BuildInfo struct {
	Version, GoVersion string
}

// Sources supplies the values read at scrape time. A nil function is
// skipped, so a process that runs without one component still serves the
// rest. The functions may be called concurrently with the producers and with
// each other and must not block for long: a scrape waits for them.
type Sources struct {
	Paths  func() []PathSample
	SRT    func() []SRTSample
	WebRTC func() WebRTCSample
	Hooks  func() HookSample
	// Refusals counts the publishers refused (or warned about) for their
	// stream, by reason (see RefusalReasons), for the life of the process.
	Refusals func() map[string]uint64
	// Panics counts the panics caught per connection, by where (every
	// place present, zeros included), for the life of the process.
	Panics func() map[string]uint64
	// Transcode is the transcode CPU budget's account.
	Transcode func() TranscodeSample
	// Renditions are the paths' lower renditions and the viewers' moves
	// between them (rendition.go).
	Renditions func() RenditionSample
	// MediaPlane reports false while the media plane is not running
	// (before its socket is bound); its series are then left out rather
	// than exported as zeros that would read as "nothing received".
	MediaPlane func() (MediaPlaneSample, bool)
	// Profiling also serves Go's pprof handlers under /debug/pprof/.
	Profiling bool
	// Build fills srtwhep_build_info (always 1). An empty Version reads
	// "unknown" and an empty GoVersion is the running runtime's.
	Build BuildInfo
	// Log receives scrape errors from Handler. Nil discards them. Serve
	// logs to its own logger instead.
	Log *slog.Logger
}

// Label values the dashboards and alerts rely on. They are exported as zero
// even before anything happens, so rate() and absent() work from the first
// scrape; values not listed here are still exported when a source reports
// them.
var (
	DropReasons   = []string{"slow_reader", "congested", "decode_error", "srt_late", "bframes"}
	SessionStates = []string{"connecting", "connected"}
	RejectReasons = []string{"reader_cap", "server_full", "no_publisher", "bad_offer", "auth", "handshake_limit", "offer_rate", "pending_limit"}
	HookResults   = []string{"sent", "dropped", "failed"}
	// RefusalReasons are ingest's Reason* slugs (no-tables and no-media:
	// connections closed for showing no stream).
	RefusalReasons = []string{"bframes", "no-h264", "not-mpegts", "unplayable-profile", "no-idr", "no-tables", "no-media",
		"transcode-budget", "picture-too-large"}
	TranscodeRefusalReasons = []string{"cpu_budget", "decode_area"}
)

// Metrics is the registry with the srtwhep collector and the standard
// process and Go runtime collectors.
type Metrics struct {
	reg       *prometheus.Registry
	col       *collector
	log       *slog.Logger
	profiling bool
}

// New builds the registry. It starts nothing; values are read only when
// the registry is gathered.
func New(src Sources) *Metrics {
	log := src.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	m := &Metrics{
		reg:       prometheus.NewRegistry(),
		col:       newCollector(src),
		log:       log,
		profiling: src.Profiling,
	}
	// The three collectors have disjoint names, so registration cannot
	// fail unless this code is wrong.
	m.reg.MustRegister(
		m.col,
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector(),
	)
	if src.Renditions != nil {
		m.reg.MustRegister(newRenditionCollector(src.Renditions))
	}
	return m
}

// Registry returns the registry, for tests and for callers that want to
// add their own collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text (or negotiated)
// format. Scrape errors go to Sources.Log.
func (m *Metrics) Handler() http.Handler { return m.handler(m.log) }

func (m *Metrics) handler(log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog: slogPrinter{log},
		// A broken source must not blank the whole page: serve what was
		// collected and count the failure in
		// promhttp_metric_handler_errors_total.
		ErrorHandling:       promhttp.ContinueOnError,
		Registry:            m.reg,
		MaxRequestsInFlight: 4,
	})
}

// slogPrinter adapts slog to promhttp's Println-style logger.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) {
	p.log.Error("metrics scrape", "err", fmt.Sprint(v...))
}
