package main

// What the composition root reads from the media planes for the metrics.

import (
	"github.com/srtwhep/srtwhep/pkg/metrics"
)

// mediaPlaneSample is metrics.Sources.MediaPlane: the own media plane's
// receive and send counters (ICE-TCP refusals apart, see
// tcpRefusalSample), false on the pion plane (pion's
// PeerConnections demultiplex inside pion and count nothing we could
// export, so no series rather than zeros that would read as "nothing
// received") and before the plane has bound its socket.
func (s *server) mediaPlaneSample() (metrics.MediaPlaneSample, bool) {
	if s.ownPlane == nil {
		return metrics.MediaPlaneSample{}, false
	}
	st, ok := s.ownPlane.Stats()
	if !ok {
		return metrics.MediaPlaneSample{}, false
	}
	return metrics.MediaPlaneSample{
		STUNAnswered:        st.STUNAnswered,
		DTLSRecords:         st.DTLSRecords,
		RTCPPackets:         st.RTCPPackets,
		DroppedMalformed:    st.DroppedMalformed,
		DroppedUnknownUfrag: st.DroppedUnknownUfrag,
		DroppedBadIntegrity: st.DroppedBadIntegrity,
		DroppedUnknownAddr:  st.DroppedUnknownAddr,
		DroppedBadSRTCP:     st.DroppedBadSRTCP,
		DroppedOther:        st.DroppedOther,
		SendSyscalls:        st.Syscalls,
		SendMessages:        st.Messages,
		ConsentAnswers:      st.ConsentAnswers,
		ConsentFailures:     st.ConsentFailures,
		TCPEvicted:          st.TCPEvicted,
	}, true
}

// tcpRefusalSample is metrics.Sources.TCPRefusals: both planes cap
// ICE-TCP with a plane.TCPLimit, so both export its refusals.
func (s *server) tcpRefusalSample() (metrics.TCPRefusalSample, bool) {
	if s.pionPlane != nil {
		perClient, global := s.pionPlane.TCPRefused()
		return metrics.TCPRefusalSample{PerClient: perClient, Global: global}, true
	}
	if s.ownPlane == nil {
		return metrics.TCPRefusalSample{}, false
	}
	st, ok := s.ownPlane.Stats()
	if !ok {
		return metrics.TCPRefusalSample{}, false
	}
	return metrics.TCPRefusalSample{PerClient: st.TCPRefusedPerClient, Global: st.TCPRefusedGlobal}, true
}
