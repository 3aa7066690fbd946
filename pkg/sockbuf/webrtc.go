package sockbuf

import (
	"log/slog"
	"net"
)

// DefaultWebRTC is the shared WebRTC UDP socket's receive and send buffer,
// for either media plane. Every viewer's STUN keepalives, RTCP reports and
// NACKs arrive on this one socket and every media packet leaves through
// it: with the kernel's default 208 KiB, 400 viewers already overflowed it
// (2,390 datagrams dropped in one run); 4 MiB holds a burst of over 1,000
// viewers' RTCP.
const DefaultWebRTC = 4 << 20

// SizeWebRTC sets the shared WebRTC socket's buffers (size 0: DefaultWebRTC,
// negative: the kernel's own), warns once when the kernel caps them, and
// returns the socket's drop counter for metrics (nil when unavailable).
func SizeWebRTC(uc *net.UDPConn, size int, log *slog.Logger) *Drops {
	if size == 0 {
		size = DefaultWebRTC
	}
	if size > 0 {
		res, err := Set(uc, size, size)
		if err != nil {
			log.Warn("cannot size the WebRTC UDP socket's buffers; keeping the kernel's", "err", err)
		} else {
			Report(log, "WebRTC UDP", "webrtc.socketBuffer", res)
		}
	}
	d, err := NewDrops(uc)
	if err != nil {
		log.Debug("the WebRTC UDP socket's kernel drops cannot be read; the metric stays 0", "err", err)
		return nil
	}
	return d
}

// Count0 is d's count, 0 when d is nil or cannot be read: metrics show a
// zero rather than fail the scrape.
func (d *Drops) Count0() uint64 {
	if d == nil {
		return 0
	}
	n, err := d.Count()
	if err != nil {
		return 0
	}
	return n
}
