package mediaplane

import (
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/pion/stun/v4"

	"github.com/srtwhep/srtwhep/pkg/panics"
	"github.com/srtwhep/srtwhep/pkg/plane"
)

// maxDatagram is the largest datagram read or built: a path MTU's worth
// with room to spare, so a larger one is truncated and dropped.
const maxDatagram = 2048

// route is where a datagram came from and where a reply goes: a UDP
// address on the shared socket, or an ICE-TCP connection (tcp set, ap its
// remote address). The two never share a key, so a UDP flow and a TCP
// connection from the same address and port stay apart.
type route struct {
	ap  netip.AddrPort
	tcp *tcpConn
}

func (r route) String() string {
	if r.tcp != nil {
		return "tcp:" + r.ap.String()
	}
	return r.ap.String()
}

// demuxState is what a reading goroutine reuses from one datagram to the
// next: the UDP demultiplexer has one, and so has each ICE-TCP connection.
type demuxState struct {
	req, resp stun.Message
	rtcp      []byte // decrypted RTCP
}

func newDemuxState() *demuxState {
	return &demuxState{rtcp: make([]byte, 0, maxDatagram)}
}

// handle dispatches one datagram from the shared UDP socket; it runs on
// the demultiplexer goroutine.
func (s *Server) handle(b []byte, from netip.AddrPort, now int64) {
	s.dispatchSafe(&s.demux, b, route{ap: from}, now)
}

// dispatchSafe is dispatch with a panic caught: a datagram from one
// viewer that reaches a bug ends the viewer at its address, if any, and
// not the goroutine every viewer's datagrams go through.
func (s *Server) dispatchSafe(d *demuxState, b []byte, from route, now int64) {
	defer panics.Catch(s.log, panics.ViewerInput, func(err error) *slog.Logger {
		if v := s.viewerAt(from); v != nil {
			v.end(fmt.Errorf("%w: %w", plane.ErrFailed, err))
			return v.log().With("media_remote", from.String())
		}
		return s.log.With("media_remote", from.String())
	})
	s.dispatch(d, b, from, now)
}

// dispatch handles one datagram (or one RFC 4571 frame) by its first byte
// (RFC 7983 §7) and its source. It never blocks on the UDP socket, so one
// goroutine serves every UDP viewer; replies go back the way the datagram
// came.
func (s *Server) dispatch(d *demuxState, b []byte, from route, now int64) {
	s.stats.datagrams.Add(1)
	if len(b) == 0 {
		s.stats.malformed.Add(1)
		return
	}
	switch c := b[0]; {
	case c <= 3:
		s.handleSTUN(d, b, from, now)
	case c >= 20 && c <= 63:
		s.handleDTLS(b, from)
	case c >= 128 && c <= 191:
		s.handleRTPOrRTCP(d, b, from, now)
	default: // ZRTP, TURN channels, QUIC: nothing of ours
		s.stats.malformed.Add(1)
	}
}

// handleRTPOrRTCP takes RTCP from a validated address (RFC 5761: packet
// types 192–223 in the second byte); a send-only server wants no RTP.
func (s *Server) handleRTPOrRTCP(d *demuxState, b []byte, from route, now int64) {
	if len(b) < 8 {
		s.stats.malformed.Add(1)
		return
	}
	v := s.viewerAt(from)
	if v == nil {
		s.stats.unknownAddr.Add(1)
		return
	}
	if b[1] < 192 || b[1] > 223 {
		s.stats.droppedOther.Add(1)
		return
	}
	s.handleRTCP(d, v, b, now)
}
