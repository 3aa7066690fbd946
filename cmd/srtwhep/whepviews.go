package main

// How the composition root shows the WHEP server to the hub, the control
// API and the metrics: whep needs none of them.

import (
	"time"

	"github.com/srtwhep/srtwhep/pkg/api"
	"github.com/srtwhep/srtwhep/pkg/config"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/ingest"
	"github.com/srtwhep/srtwhep/pkg/mediaplane"
	"github.com/srtwhep/srtwhep/pkg/metrics"
	"github.com/srtwhep/srtwhep/pkg/rtpsend"
	"github.com/srtwhep/srtwhep/pkg/whep"
	"github.com/srtwhep/srtwhep/pkg/whepevents"
)

// hubSource serves viewers from the hub every publisher writes to. The
// readers are pending (hub.Hub.AddPendingReader): an answered offer holds
// no reader slot until its viewer starts ICE.
func hubSource(h *hub.Hub) whep.Source {
	return whep.SourceFuncs[*hub.Reader]{Add: h.AddPendingReader, AddTranscoded: h.AddPendingTranscodedReader}
}

// whepSessions describes the WHEP server's sessions for the control API.
type whepSessions struct{ *whep.Server }

func (ws whepSessions) APISessions() []api.Session {
	infos := ws.Sessions()
	out := make([]api.Session, 0, len(infos))
	now := time.Now()
	for _, si := range infos {
		s := api.Session{
			ID: si.ID, Path: si.Path, Remote: si.Remote, State: si.State, Since: si.Since,
			Packets: si.PacketsSent, Bytes: si.BytesSent, Dropped: si.Dropped,
		}
		if e := si.Estimate; e.Bitrate > 0 {
			s.Bandwidth = &api.Bandwidth{Bitrate: e.Bitrate, Source: e.Source.String(), Trend: e.Trend.String(),
				SinceDecreaseMs: e.SinceDecrease(now, si.Started).Milliseconds()}
		}
		out = append(out, s)
	}
	return out
}

// estimateBuckets bound srtwhep_viewer_estimated_bandwidth_bytes_per_second,
// in bytes per second (Prometheus' base unit): 250 kbit/s, from a phone on
// a weak cell, to 12 Mbit/s, more than any one stream needs.
var estimateBuckets = []float64{31_250, 62_500, 93_750, 125_000, 187_500, 250_000, 375_000, 625_000, 1_000_000, 1_500_000}

// estimates sorts the viewers' bandwidth estimates into a histogram per
// source (each source's exported empty while no viewer has one), for a
// scrape.
func estimates(infos []whep.SessionInfo) map[string]metrics.Histogram {
	out := map[string]metrics.Histogram{}
	for _, source := range metrics.EstimateSources {
		out[source] = metrics.Histogram{UpperBounds: estimateBuckets, Cumulative: make([]uint64, len(estimateBuckets))}
	}
	for _, si := range infos {
		e := si.Estimate
		h, ok := out[e.Source.String()]
		if e.Bitrate <= 0 || !ok {
			continue
		}
		v := float64(e.Bitrate) / 8
		for i, b := range estimateBuckets {
			if v <= b {
				h.Cumulative[i]++
			}
		}
		h.Count++
		h.SumSeconds += v
		out[e.Source.String()] = h
	}
	return out
}

// webRTCSample describes the WHEP server, its event streams and its media
// plane's socket for a Prometheus scrape. Sessions still in ICE or DTLS
// count as connecting, whatever pion calls the state.
func webRTCSample(w *whep.Server, ev *whepevents.Streams, pl *mediaplane.Plane, lat *rtpsend.Latency, rs *rtpsend.Resends) func() metrics.WebRTCSample {
	return func() metrics.WebRTCSample {
		st := w.Stats()
		resent, resendDropped := rs.Counts()
		sse := ev.Stats()
		datagrams, refused, receiveDrops := pl.SocketStats()
		states := map[string]int{"connecting": 0, "connected": 0}
		for state, n := range st.StateCounts {
			if state == "connected" {
				states["connected"] += n
			} else {
				states["connecting"] += n
			}
		}
		return metrics.WebRTCSample{
			SessionsByState:    states,
			HandshakesInFlight: st.HandshakesInFlight,
			OffersPending:      st.PendingOffers,
			HandshakesFailed:   st.HandshakeFailures,
			SessionsTotal:      st.SessionsOpened,
			RejectedTotal:      st.Rejected,
			UDPDatagrams:       datagrams,
			UDPRefused:         refused,
			UDPReceiveDrops:    receiveDrops,
			ServerLatency:      lat.Snapshot(),
			NACKResentBytes:    resent,
			NACKResendDropped:  resendDropped,
			EstimatedBitrate:   estimates(w.Sessions()),
			SSEStreams:         sse.Streams,
			SSEEvents:          sse.Sent,
		}
	}
}

// ladderSettings is a path's renditions key as pkg/ingest takes it.
func ladderSettings(r config.Renditions) ingest.LadderSettings {
	s := ingest.LadderSettings{Off: r.Off}
	for _, st := range r.Steps {
		s.Steps = append(s.Steps, ingest.Rendition{Height: st.Height, Bitrate: st.Bitrate})
	}
	return s
}

// renditionSample is the paths' lower renditions and the viewers' moves
// between them, for the metrics.
func (s *server) renditionSample() metrics.RenditionSample {
	up, down := s.layers.Switches()
	return metrics.RenditionSample{Renditions: s.ingest.RenditionSamples(), SwitchesUp: up, SwitchesDown: down}
}
