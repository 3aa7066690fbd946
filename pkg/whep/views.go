package whep

import (
	"github.com/srtwhep/srtwhep/pkg/api"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/metrics"
)

// APISessions describes the open sessions for the control API.
func (s *Server) APISessions() []api.Session {
	infos := s.Sessions()
	out := make([]api.Session, 0, len(infos))
	for _, si := range infos {
		out = append(out, api.Session{
			ID: si.ID, Path: si.Path, Remote: si.Remote, State: si.State, Since: si.Since,
			Packets: si.PacketsSent, Bytes: si.BytesSent, Dropped: si.Dropped,
		})
	}
	return out
}

// MetricsSample describes the server for a Prometheus scrape. Sessions
// still in ICE or DTLS count as connecting, whatever pion calls the state.
func (s *Server) MetricsSample() metrics.WebRTCSample {
	st := s.Stats()
	sse := s.SSEStats()
	states := map[string]int{"connecting": 0, "connected": 0}
	for state, n := range st.StateCounts {
		if state == "connected" {
			states["connected"] += n
		} else {
			states["connecting"] += n
		}
	}
	resent, dropped := s.resends.Counts()
	return metrics.WebRTCSample{
		SessionsByState:    states,
		HandshakesInFlight: st.HandshakesInFlight,
		OffersPending:      st.PendingOffers,
		HandshakesFailed:   st.HandshakeFailures,
		SessionsTotal:      st.SessionsOpened,
		RejectedTotal:      st.Rejected,
		UDPDatagrams:       st.UDPDatagrams,
		UDPRefused:         st.UDPRefused,
		UDPReceiveDrops:    st.UDPReceiveDrops,
		ServerLatency:      s.latency.Snapshot(),
		NACKResentBytes:    resent,
		NACKResendDropped:  dropped,
		SSEStreams:         sse.Streams,
		SSEEvents:          sse.Sent,
	}
}

// HubSource serves viewers from h, the hub every publisher writes to.
func HubSource(h *hub.Hub) Source { return hubSource{h} }

type hubSource struct{ h *hub.Hub }

// The readers are pending (hub.Hub.AddPendingReader): an answered offer
// holds no reader slot until its viewer starts ICE (claimReader).
func (hs hubSource) AddReader(path, session string) (Reader, error) {
	r, err := hs.h.AddPendingReader(path, session)
	if err != nil {
		return nil, err // not a typed nil inside the interface
	}
	return r, nil
}

func (hs hubSource) AddTranscodedReader(path, session string) (Reader, error) {
	r, err := hs.h.AddPendingTranscodedReader(path, session)
	if err != nil {
		return nil, err
	}
	return r, nil
}
