package pionplane

import (
	"net"

	"github.com/pion/ice/v4"
	"github.com/pion/logging"
)

// newTCPMux serves ICE-TCP on ln with unbuffered writes.
//
// pion's own constructor (webrtc.NewICETCPMux) queues up to 4 MB per
// connection and, once that is full, fails writes one packet at a time: a
// viewer on a link slower than the stream first falls up to ~13 s behind
// (at 2.5 Mbit/s) and then loses packets in the middle of pictures. A
// write that blocks instead lets the kernel's socket buffer be the only
// queue, so the session's sender slows down, its hub queue fills, and the
// viewer drops whole frames to the next IDR like any slow reader, while
// every other session writes on its own connection undisturbed.
func newTCPMux(logger logging.LeveledLogger, ln net.Listener) ice.TCPMux {
	return ice.NewTCPMuxDefault(ice.TCPMuxParams{
		Listener:       ln,
		Logger:         logger,
		ReadBufferSize: 8, // what webrtc.NewICETCPMux is given here
	})
}
