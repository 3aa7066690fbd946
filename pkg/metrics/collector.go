package metrics

import (
	"runtime"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// collector reads the sources at scrape time and emits const metrics.
type collector struct {
	src   Sources
	descs [numDefs]*prometheus.Desc
}

func newCollector(src Sources) *collector {
	c := &collector{src: src}
	for i, d := range defs {
		c.descs[i] = prometheus.NewDesc(d.name, d.help, d.labels, nil)
	}
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	if c.src.Paths != nil {
		c.collectPaths(ch, c.src.Paths())
	}
	if c.src.SRT != nil {
		c.collectSRT(ch, c.src.SRT())
	}
	if c.src.WebRTC != nil {
		c.collectWebRTC(ch, c.src.WebRTC())
	}
	if c.src.MediaPlane != nil {
		if s, ok := c.src.MediaPlane(); ok {
			c.collectMediaPlane(ch, s)
		}
	}
	if c.src.Refusals != nil {
		for reason, n := range withZeros(c.src.Refusals(), RefusalReasons) {
			c.emit(ch, publisherRefusals, float64(n), labelValue(reason))
		}
	}
	if c.src.Panics != nil {
		for where, n := range c.src.Panics() {
			c.emit(ch, panicsCaught, float64(n), labelValue(where))
		}
	}
	if c.src.Transcode != nil {
		t := c.src.Transcode()
		c.emit(ch, transcodeUsed, t.UsedCores)
		c.emit(ch, transcodeLimit, t.LimitCores)
		c.emit(ch, transcodeRunning, float64(t.Running))
		for reason, n := range withZeros(t.Refused, TranscodeRefusalReasons) {
			c.emit(ch, transcodeRefused, float64(n), labelValue(reason))
		}
	}
	if c.src.Hooks != nil {
		h := c.src.Hooks()
		for i, n := range []uint64{h.Sent, h.Dropped, h.Failed} {
			c.emit(ch, hookEvents, float64(n), HookResults[i])
		}
	}
	version := c.src.Build.Version
	if version == "" {
		version = "unknown"
	}
	goVersion := c.src.Build.GoVersion
	if goVersion == "" {
		goVersion = runtime.Version()
	}
	c.emit(ch, buildInfo, 1, version, goVersion)
}

func (c *collector) collectPaths(ch chan<- prometheus.Metric, samples []PathSample) {
	seen := make(map[string]bool, len(samples))
	for _, s := range samples {
		p := labelValue(s.Path)
		// A second sample for the same path would make the whole scrape
		// fail as a duplicate series; keep the first.
		if seen[p] {
			continue
		}
		seen[p] = true
		c.emit(ch, pathPublisherUp, boolFloat(s.PublisherUp), p)
		c.emit(ch, pathReaders, float64(s.Readers), p)
		c.emit(ch, pathIngestBytes, float64(s.IngestBytes), p)
		c.emit(ch, pathIngestFrames, float64(s.IngestFrames), p)
		for reason, n := range withZeros(s.FramesDropped, DropReasons) {
			c.emit(ch, pathFramesDropped, float64(n), p, reason, "video")
		}
		c.emit(ch, pathFramesDropped, float64(s.AudioFramesDropped), p, "slow_reader", "audio")
		c.emit(ch, pathSentBytes, float64(s.BytesOut), p)
		c.emit(ch, pathSentPackets, float64(s.PacketsOut), p)
		c.emit(ch, pathWidth, float64(s.Width), p)
		c.emit(ch, pathHeight, float64(s.Height), p)
		c.emit(ch, pathFPS, s.FPS, p)
		if s.AudioCodecIn != "" {
			c.emit(ch, pathAudioInfo, 1, p, labelValue(s.AudioCodecIn), labelValue(s.AudioCodecOut))
		}
		c.emit(ch, pathAudioFramesIn, float64(s.AudioFramesIn), p)
		c.emit(ch, pathAudioFramesOut, float64(s.AudioFramesOut), p)
		c.emit(ch, pathAudioErrors, float64(s.AudioErrors), p)
		c.emit(ch, pathAudioCPU, s.AudioTranscodeCPUSeconds, p)
		c.emit(ch, pathVideoTranscoded, float64(s.VideoTranscodedFrames), p)
		c.emit(ch, pathVideoCPU, s.VideoTranscodeCPUSeconds, p)
		if s.NoPicture != "" {
			c.emit(ch, pathNoPicture, 1, p, labelValue(s.NoPicture))
		}
	}
}

func (c *collector) collectSRT(ch chan<- prometheus.Metric, samples []SRTSample) {
	seen := make(map[string]bool, len(samples))
	for _, s := range samples {
		p := labelValue(s.Path)
		// A replaced publisher may still be closing while its successor is
		// counted; the first sample wins rather than failing the scrape.
		if seen[p] {
			continue
		}
		seen[p] = true
		c.emit(ch, srtRTT, s.RTTSeconds, p)
		// Samples carry bit/s as libsrt reports rates; promlint wants bytes.
		c.emit(ch, srtRecvRate, s.ReceiveRateBitsPerSecond/8, p)
		c.emit(ch, srtPktsRecv, float64(s.PacketsReceived), p)
		c.emit(ch, srtPktsLost, float64(s.PacketsLost), p)
		c.emit(ch, srtPktsRetrans, float64(s.PacketsRetransmitted), p)
		c.emit(ch, srtPktsDropped, float64(s.PacketsDropped), p)
		c.emit(ch, srtBytesRecv, float64(s.BytesReceived), p)
		c.emit(ch, srtDecodeErrors, float64(s.DecodeErrors), p)
		c.emit(ch, srtLatency, s.LatencySeconds, p)
		c.emit(ch, srtRecommendedLatency, s.RecommendedLatencySeconds, p)
	}
}

func (c *collector) collectWebRTC(ch chan<- prometheus.Metric, s WebRTCSample) {
	states := make(map[string]uint64, len(SessionStates)+len(s.SessionsByState))
	for _, st := range SessionStates {
		states[st] = 0
	}
	for st, n := range s.SessionsByState {
		states[labelValue(st)] += uint64(max(n, 0))
	}
	for st, n := range states {
		c.emit(ch, webrtcSessions, float64(n), st)
	}
	c.emit(ch, webrtcHandshakesInFlight, float64(s.HandshakesInFlight))
	c.emit(ch, webrtcOffersPending, float64(s.OffersPending))
	c.emit(ch, webrtcHandshakesFailed, float64(s.HandshakesFailed))
	c.emit(ch, webrtcSessionsTotal, float64(s.SessionsTotal))
	for reason, n := range withZeros(s.RejectedTotal, RejectReasons) {
		c.emit(ch, webrtcRejected, float64(n), reason)
	}
	c.emit(ch, webrtcUDPDatagrams, float64(s.UDPDatagrams))
	c.emit(ch, webrtcUDPRefused, float64(s.UDPRefused))
	c.emit(ch, webrtcUDPReceiveDrops, float64(s.UDPReceiveDrops))
	c.emit(ch, webrtcNACKResentBytes, float64(s.NACKResentBytes))
	c.emit(ch, webrtcNACKResendDropped, float64(s.NACKResendDropped))
	c.emit(ch, sseStreams, float64(s.SSEStreams))
	for typ, n := range withZeros(s.SSEEvents, SSEEventTypes) {
		c.emit(ch, sseEvents, float64(n), typ)
	}
	c.emitHistogram(ch, serverLatency, s.ServerLatency)
	for _, source := range EstimateSources {
		c.emitHistogram(ch, viewerEstimatedBitrate, s.EstimatedBitrate[source], source)
	}
}

// emitHistogram emits h unless it has no buckets.
func (c *collector) emitHistogram(ch chan<- prometheus.Metric, d int, h Histogram, labels ...string) {
	if len(h.UpperBounds) == 0 || len(h.Cumulative) != len(h.UpperBounds) {
		return
	}
	buckets := make(map[float64]uint64, len(h.UpperBounds))
	for i, b := range h.UpperBounds {
		buckets[b] = h.Cumulative[i]
	}
	m, err := prometheus.NewConstHistogram(c.descs[d], h.Count, h.SumSeconds, buckets, labels...)
	if err != nil {
		m = prometheus.NewInvalidMetric(c.descs[d], err)
	}
	ch <- m
}

func (c *collector) collectMediaPlane(ch chan<- prometheus.Metric, s MediaPlaneSample) {
	c.emit(ch, webrtcReceived, float64(s.STUNAnswered), "stun")
	c.emit(ch, webrtcReceived, float64(s.DTLSRecords), "dtls")
	c.emit(ch, webrtcReceived, float64(s.RTCPPackets), "rtcp")
	c.emit(ch, webrtcReceived, float64(s.ConsentAnswers), "consent")
	c.emit(ch, webrtcReceiveDropped, float64(s.DroppedMalformed), "malformed")
	c.emit(ch, webrtcReceiveDropped, float64(s.DroppedUnknownUfrag), "unknown_ufrag")
	c.emit(ch, webrtcReceiveDropped, float64(s.DroppedBadIntegrity), "bad_integrity")
	c.emit(ch, webrtcReceiveDropped, float64(s.DroppedUnknownAddr), "unknown_addr")
	c.emit(ch, webrtcReceiveDropped, float64(s.DroppedBadSRTCP), "bad_srtcp")
	c.emit(ch, webrtcReceiveDropped, float64(s.DroppedOther), "other")
	c.emit(ch, webrtcSendSyscalls, float64(s.SendSyscalls))
	c.emit(ch, webrtcSendMessages, float64(s.SendMessages))
	c.emit(ch, webrtcConsentFailures, float64(s.ConsentFailures))
	c.emit(ch, webrtcTCPEvicted, float64(s.TCPEvicted))
	c.emit(ch, webrtcTCPRefused, float64(s.TCPRefusedPerClient), "per_client")
	c.emit(ch, webrtcTCPRefused, float64(s.TCPRefusedGlobal), "global")
}

func (c *collector) emit(ch chan<- prometheus.Metric, i int, v float64, labels ...string) {
	m, err := prometheus.NewConstMetric(c.descs[i], defs[i].typ, v, labels...)
	if err != nil {
		// Only a wrong label count gets here (values are sanitised). Report
		// it through the registry instead of panicking inside Gather.
		m = prometheus.NewInvalidMetric(c.descs[i], err)
	}
	ch <- m
}

// withZeros returns counts with every known key present, merging keys that
// sanitise to the same label value so no series is emitted twice.
func withZeros(counts map[string]uint64, known []string) map[string]uint64 {
	out := make(map[string]uint64, len(known)+len(counts))
	for _, k := range known {
		out[k] = 0
	}
	for k, n := range counts {
		out[labelValue(k)] += n
	}
	return out
}

// labelValue makes a producer string a legal label value. Paths come from
// publishers' stream IDs, so they are not trusted to be UTF-8.
func labelValue(s string) string {
	return strings.ToValidUTF8(s, "\uFFFD")
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
