// Package srtcall is a test-only SRT caller, for publishers and readers
// alike, over pkg/srt's DialSocket: a raw srtgo socket that can Write,
// any streamid sent unchecked, and the listener's reject reason kept on a
// refused connect (srtgo's own Connect closes the socket on failure,
// which erases it; tests need it). pkg/srt's own tests call DialSocket
// directly, as importing this package from there would be a cycle.
package srtcall

import (
	"context"
	"net"
	"net/netip"
	"time"

	"github.com/haivision/srtgo"

	"github.com/srtwhep/srtwhep/pkg/srt"
)

// Options for Dial; zero values keep libsrt's defaults.
type Options struct {
	StreamID   string
	Passphrase string
	Latency    time.Duration
	// RcvBuf is libsrt's receive buffer in bytes (SRTO_RCVBUF; libsrt
	// keeps at least 32 packets): a reader that stops reading fills a
	// small one within a fraction of a second, where the default takes
	// half a minute of a typical stream.
	RcvBuf int
	// ReadTimeout makes a Read that gets nothing for this long fail
	// (SRTO_RCVTIMEO), so a test that waits for data it never gets fails
	// instead of hanging; 0 blocks.
	ReadTimeout time.Duration
	// LocalIP is the address the call leaves from (127.0.0.2, …); nil
	// lets the kernel pick.
	LocalIP net.IP
}

// RejectedError is a failed connect; its Reason is the reject reason
// libsrt reported.
type RejectedError = srt.DialError

// Dial connects a blocking live-mode caller to addr. The returned socket
// is ready for Write, or Read with a streamid that reads; close it with
// Close. libsrt's connect timeout (3 s) bounds the handshake.
func Dial(addr *net.UDPAddr, o Options) (*srtgo.SrtSocket, error) {
	return srt.DialSocket(context.Background(), srt.DialConfig{
		Addr: addr.String(), StreamID: o.StreamID, Passphrase: o.Passphrase,
		Latency: o.Latency, RcvBuf: o.RcvBuf, ReadTimeout: o.ReadTimeout, LocalIP: localIP(o.LocalIP),
	})
}

func localIP(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a.Unmap()
}

// Close closes a socket Dial returned (srt.CloseSocket: through a copy,
// without srtgo's finalizer).
func Close(s *srtgo.SrtSocket) { srt.CloseSocket(s) }
