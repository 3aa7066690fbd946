//go:build !linux

package mediaplane

import (
	"net/netip"
	"time"
)

// readLoop reads one datagram per system call where recvmmsg is missing.
func (s *Server) readLoop() {
	buf := make([]byte, maxDatagram)
	for {
		n, from, err := s.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		s.handle(buf[:n], netip.AddrPortFrom(from.Addr().Unmap(), from.Port()), time.Now().UnixNano())
	}
}
