//go:build linux

package mediaplane

import (
	"time"

	"github.com/srtwhep/srtwhep/internal/mmsg"
)

// readBatch datagrams are read per recvmmsg: at a thousand viewers'
// reports and checks a second, a batch rarely fills, but a burst costs
// one system call instead of dozens.
const readBatch = 32

// readLoop is the demultiplexer goroutine: it reads the socket until it
// is closed and dispatches every datagram.
func (s *Server) readLoop() {
	r := mmsg.NewRecvBatch(readBatch, maxDatagram, 0)
	for {
		n, errno, err := r.Recv(s.raw)
		if err != nil {
			return // the socket was closed
		}
		if errno != 0 {
			continue // EINTR, or an error queued by an ICMP message
		}
		now := time.Now().UnixNano()
		for i := range n {
			ap, ok := r.Addr(i)
			if !ok || r.Truncated(i) {
				s.stats.datagrams.Add(1)
				s.stats.malformed.Add(1)
				continue
			}
			s.handle(r.Data(i), ap, now)
		}
	}
}
