package whep

import (
	"github.com/srtwhep/srtwhep/pkg/mediaplane"
	"github.com/srtwhep/srtwhep/pkg/metrics"
)

// planeStatser is a plane that counts, datagram by datagram, what its
// shared socket receives. Only the own plane does: pion's PeerConnections
// demultiplex inside pion and count nothing we could export, so the pion
// plane exports no such series rather than zeros that would read as
// "nothing received".
type planeStatser interface {
	planeStats() mediaplane.Stats
}

func (p *ownPlane) planeStats() mediaplane.Stats { return p.srv.Stats() }

// MediaPlaneSample is metrics.Sources.MediaPlane: the own media plane's
// receive and send counters, false on the pion plane and before Run has
// bound the socket.
func (s *Server) MediaPlaneSample() (metrics.MediaPlaneSample, bool) {
	p := s.plane.Load()
	if p == nil {
		return metrics.MediaPlaneSample{}, false
	}
	ps, ok := (*p).(planeStatser)
	if !ok {
		return metrics.MediaPlaneSample{}, false
	}
	st := ps.planeStats()
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
	}, true
}
