package ingest

import (
	"github.com/srtwhep/srtwhep/pkg/api"
	"github.com/srtwhep/srtwhep/pkg/metrics"
)

// APIPaths describes the paths for the control API.
func (m *Manager) APIPaths() []api.Path {
	stats := m.Stats()
	out := make([]api.Path, 0, len(stats))
	for _, p := range stats {
		t := p.Totals
		ap := api.Path{
			Name: p.Path, Codec: p.Info.Codec, Profile: p.Info.Profile,
			Width: p.Info.Width, Height: p.Info.Height, FPS: p.Info.FPS,
			IngestBytes: t.IngestBytes, IngestFrames: t.IngestFrames, Readers: p.Readers,
			Dropped: t.DroppedSlowReader + t.DroppedDecodeError + t.DroppedSRTLate,
		}
		if p.Transcode.Reason != "" {
			ap.Transcode = &api.Transcode{Reason: p.Transcode.Reason, FramesOut: t.VideoTranscodedFrames,
				CPUSeconds: t.VideoTranscodeCPU.Seconds(), LatencyMs: float64(p.Transcode.Latency.Microseconds()) / 1000}
		}
		ap.Renditions = make([]api.Rendition, 0, len(p.Renditions))
		for _, r := range p.Renditions {
			ap.Renditions = append(ap.Renditions, api.Rendition{Name: r.ID, Width: r.Width, Height: r.Height, Bitrate: r.Bitrate,
				Viewers: r.Viewers, Running: r.Running, CPUPercent: 100 * r.Load, CPUSeconds: r.CPU.Seconds()})
		}
		if p.AudioIn != "" {
			ap.Audio = &api.Audio{CodecIn: p.AudioIn, CodecOut: p.AudioOut, FramesIn: t.AudioFramesIn,
				FramesOut: t.AudioFramesOut, Errors: t.AudioErrors, TranscodeCPUSeconds: t.TranscodeCPU.Seconds()}
		}
		if pr := p.Problem; pr != nil {
			a := &api.Problem{Reason: pr.Reason, Detail: pr.Text, Remote: pr.Remote, At: pr.At, Count: pr.Count}
			if pr.Live {
				ap.Warning = a
			} else {
				ap.Refused = a
			}
		}
		if pub := p.Publisher; pub != nil {
			ap.Publisher = &api.Publisher{Remote: pub.Remote, Since: pub.Since, RTTMs: pub.SRT.RTTMs, PacketsLost: pub.SRT.PacketsLost}
			ap.IngestBitrate = pub.SRT.RecvMbps * 1e6
		}
		out = append(out, ap)
	}
	return out
}

// RenditionSamples describes the live paths' lower renditions for a
// scrape.
func (m *Manager) RenditionSamples() []metrics.Rendition {
	var out []metrics.Rendition
	for _, p := range m.Stats() {
		for _, r := range p.Renditions {
			out = append(out, metrics.Rendition{Path: p.Path, Name: r.ID, Viewers: r.Viewers, Running: r.Running, CPUCores: r.Load})
		}
	}
	return out
}

// KickPublisher closes the publisher of path; false when there is none.
func (m *Manager) KickPublisher(path string) bool { return m.Kick(path) }

// PathSamples describes every reported path for a Prometheus scrape.
func (m *Manager) PathSamples() []metrics.PathSample {
	stats := m.Stats()
	out := make([]metrics.PathSample, 0, len(stats))
	for _, p := range stats {
		t := p.Totals
		out = append(out, metrics.PathSample{
			Path:         p.Path,
			PublisherUp:  p.Publisher != nil && p.Publisher.Streaming,
			Readers:      p.Readers,
			IngestBytes:  t.IngestBytes,
			IngestFrames: t.IngestFrames,
			FramesDropped: map[string]uint64{"slow_reader": t.DroppedVideo - t.DroppedCongested, "congested": t.DroppedCongested,
				"decode_error": t.DroppedDecodeError, "srt_late": t.DroppedSRTLate, "bframes": t.DroppedBFrames},
			AudioFramesDropped:       t.DroppedAudio,
			BytesOut:                 t.BytesOut,
			PacketsOut:               t.PacketsOut,
			Width:                    p.Info.Width,
			Height:                   p.Info.Height,
			FPS:                      p.Info.FPS,
			AudioCodecIn:             p.AudioIn,
			AudioCodecOut:            p.AudioOut,
			AudioFramesIn:            t.AudioFramesIn,
			AudioFramesOut:           t.AudioFramesOut,
			AudioErrors:              t.AudioErrors,
			AudioTranscodeCPUSeconds: t.TranscodeCPU.Seconds(),
			VideoTranscodedFrames:    t.VideoTranscodedFrames,
			VideoTranscodeCPUSeconds: t.VideoTranscodeCPU.Seconds(),
			NoPicture:                noPicture(p.Problem),
		})
	}
	return out
}

// SRTSamples describes the connected publishers' SRT links for a scrape.
func (m *Manager) SRTSamples() []metrics.SRTSample {
	var out []metrics.SRTSample
	for _, p := range m.Stats() {
		if p.Publisher == nil {
			continue
		}
		st := p.Publisher.SRT
		out = append(out, metrics.SRTSample{
			Path:                      p.Path,
			RTTSeconds:                st.RTTMs / 1000,
			ReceiveRateBitsPerSecond:  st.RecvMbps * 1e6,
			PacketsReceived:           uint64(max(st.PacketsReceived, 0)),
			PacketsLost:               uint64(max(st.PacketsLost, 0)),
			PacketsRetransmitted:      uint64(max(st.PacketsRetransmitted, 0)),
			PacketsDropped:            uint64(max(st.PacketsDropped, 0)),
			BytesReceived:             uint64(max(st.Bytes, 0)),
			DecodeErrors:              p.Totals.DecodeErrors,
			LatencySeconds:            float64(st.LatencyMs) / 1000,
			RecommendedLatencySeconds: recommended(st).Seconds(),
		})
	}
	return out
}

func noPicture(p *Problem) string {
	if p == nil || !p.Live {
		return ""
	}
	return p.Reason
}
