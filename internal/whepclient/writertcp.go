package whepclient

import (
	"fmt"

	"github.com/pion/rtcp"
)

// WriteRTCP sends pkts to the server as one compound SRTCP packet over the
// session's DTLS-derived keys. whep-loadgen's light viewers need it: their
// media never reaches pion (they count it from the clear RTP headers), so
// pion's own report and NACK interceptors see nothing, and the viewer
// builds its receiver reports and NACKs from its own counts instead.
func (s *Session) WriteRTCP(pkts []rtcp.Packet) error {
	if err := s.pc.WriteRTCP(pkts); err != nil {
		return fmt.Errorf("whepclient: write RTCP: %w", err)
	}
	return nil
}
