package main

// How the composition root shows the WHEP server to the hub, the control
// API and the metrics: whep needs none of them.

import (
	"github.com/srtwhep/srtwhep/pkg/api"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/mediaplane"
	"github.com/srtwhep/srtwhep/pkg/metrics"
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
	for _, si := range infos {
		out = append(out, api.Session{
			ID: si.ID, Path: si.Path, Remote: si.Remote, State: si.State, Since: si.Since,
			Packets: si.PacketsSent, Bytes: si.BytesSent, Dropped: si.Dropped,
		})
	}
	return out
}

// webRTCSample describes the WHEP server, its event streams and its media
// plane's socket for a Prometheus scrape. Sessions still in ICE or DTLS
// count as connecting, whatever pion calls the state.
func webRTCSample(w *whep.Server, ev *whepevents.Streams, pl *mediaplane.Plane) func() metrics.WebRTCSample {
	return func() metrics.WebRTCSample {
		st := w.Stats()
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
			ServerLatency:      st.Latency,
			NACKResentBytes:    st.NACKResentBytes,
			NACKResendDropped:  st.NACKResendDropped,
			SSEStreams:         sse.Streams,
			SSEEvents:          sse.Sent,
		}
	}
}
