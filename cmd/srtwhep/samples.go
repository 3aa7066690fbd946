package main

// What the composition root reads from the media plane for the metrics.

import (
	"github.com/srtwhep/srtwhep/pkg/metrics"
	"github.com/srtwhep/srtwhep/pkg/panics"
)

// mediaPlaneSample is metrics.Sources.MediaPlane: the media plane's
// receive and send counters, false before the plane has bound its socket.
func (s *server) mediaPlaneSample() (metrics.MediaPlaneSample, bool) {
	if s.plane == nil {
		return metrics.MediaPlaneSample{}, false
	}
	st, ok := s.plane.Stats()
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
		TCPRefusedPerClient: st.TCPRefusedPerClient,
		TCPRefusedGlobal:    st.TCPRefusedGlobal,
	}, true
}

// panicCounts is srtwhep_panics_total's source: every place, zeros
// included, so an alert on an increase has a series from the start.
func panicCounts() map[string]uint64 {
	m := panics.Counts()
	for _, p := range panics.Places {
		m[p] += 0
	}
	return m
}

// transcodeSample is metrics.Sources.Transcode.
func (s *server) transcodeSample() metrics.TranscodeSample {
	st := s.transcodes.Stats()
	return metrics.TranscodeSample{UsedCores: st.Used, LimitCores: st.Limit, Running: st.Holders,
		Refused: map[string]uint64{"cpu_budget": st.Refused, "decode_area": s.ingest.AreaRefused()}}
}
