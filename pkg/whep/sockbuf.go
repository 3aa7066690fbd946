package whep

import (
	"log/slog"
	"net"

	"github.com/srtwhep/srtwhep/pkg/sockbuf"
)

// DefaultSocketBuffer is the WebRTC UDP socket's receive and send buffer.
// Every viewer's STUN keepalives, RTCP reports and NACKs arrive on this one
// socket and every media packet leaves through it: with the kernel's
// default 208 KiB, 400 viewers already overflowed it (2,390 datagrams
// dropped in one run); 4 MiB holds a burst of over 1,000 viewers' RTCP.
const DefaultSocketBuffer = 4 << 20

// sizeUDPBuffers sets the shared socket's buffers (size 0: the default,
// negative: the kernel's own), warns once when the kernel caps them, and
// returns the socket's drop counter for metrics (nil when unavailable).
func sizeUDPBuffers(uc *net.UDPConn, size int, log *slog.Logger) *sockbuf.Drops {
	if size == 0 {
		size = DefaultSocketBuffer
	}
	if size > 0 {
		res, err := sockbuf.Set(uc, size, size)
		if err != nil {
			log.Warn("cannot size the WebRTC UDP socket's buffers; keeping the kernel's", "err", err)
		} else {
			sockbuf.Report(log, "WebRTC UDP", "webrtc.socketBuffer", res)
		}
	}
	d, err := sockbuf.NewDrops(uc)
	if err != nil {
		log.Debug("the WebRTC UDP socket's kernel drops cannot be read; the metric stays 0", "err", err)
		return nil
	}
	return d
}

// udpReceiveDrops is the shared socket's kernel drop count, 0 before Run
// or when unavailable.
func (s *Server) udpReceiveDrops() uint64 {
	p := s.plane.Load()
	if p == nil {
		return 0
	}
	d := (*p).udpDrops()
	if d == nil {
		return 0
	}
	n, err := d.Count()
	if err != nil {
		return 0
	}
	return n
}
