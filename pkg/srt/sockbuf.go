package srt

import (
	"github.com/haivision/srtgo"

	"github.com/srtwhep/srtwhep/pkg/sockbuf"
)

// DefaultSocketBuffer is the SRT UDP socket's kernel receive buffer. A
// publisher's packets, and its retransmissions after a loss, arrive in
// bursts that a 208 KiB default buffer (what libsrt's own larger request
// is silently cut to) drops when the receive thread is briefly busy; 4 MiB
// holds over a second of a 20 Mbit/s stream.
const DefaultSocketBuffer = 4 << 20

// srtoUDPRcvBuf is SRTO_UDP_RCVBUF, which srtgo has no constant for. It
// must be set before bind; accepted sockets share the listener's UDP
// socket, so it covers every publisher. libsrt's own receive buffer
// (SRTO_RCVBUF, 8192 packets ≈ 12 MB by default) is already larger than
// any sensible value here and is left alone.
const srtoUDPRcvBuf = 9

// setSocketBuffer requests the configured size on the listener before it
// binds and returns it (0 when libsrt's default is kept).
func (s *Server) setSocketBuffer(ln *srtgo.SrtSocket) int {
	size := s.cfg.SocketBuffer
	if size == 0 {
		size = DefaultSocketBuffer
	}
	if size < 0 {
		return 0
	}
	if err := ln.SetSockOptInt(srtoUDPRcvBuf, size); err != nil {
		s.log.Warn("cannot size the SRT UDP socket's receive buffer; keeping libsrt's", "err", err)
		return 0
	}
	return size
}

// reportSocketBuffer warns once when the kernel caps the buffer. libsrt
// owns the UDP socket and reports back only what was asked for, so the
// kernel's answer is worked out from its rule (twice the request, at most
// twice net.core.rmem_max).
func (s *Server) reportSocketBuffer(size int) {
	if size == 0 {
		return
	}
	res, err := sockbuf.Predict(size, 0)
	if err != nil {
		s.log.Debug("cannot read the kernel's socket buffer limit", "err", err)
		return
	}
	sockbuf.Report(s.log, "SRT UDP", "srt.socketBuffer", res)
}
