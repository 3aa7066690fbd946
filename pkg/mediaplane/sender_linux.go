//go:build linux

package mediaplane

import (
	"net"
	"net/netip"
	"syscall"

	"github.com/srtwhep/srtwhep/internal/mmsg"
)

// sendState is the sendmmsg side of a Sender: one message per run of a
// viewer's packets that UDP GSO can carry as one (all segments the size
// of the first, the last possibly shorter), each slot one iovec.
type sendState struct {
	udp *mmsg.SendBatch
}

func (snd *Sender) initSend(packets int) { snd.udp = mmsg.NewSendBatch(packets) }

// add puts the encrypted slot into the current message of r's frame, or
// starts a message: a frame's first packet always starts one.
func (snd *Sender) add(r *peerAddr, slot int, frameStart bool) {
	at := slot * slotSize
	snd.udp.Add(snd.buf[at:at+snd.lens[slot]], (*mmsg.Sockaddr)(&r.name), r.nlen, !frameStart && snd.srv.gso.Load())
}

// flush sends the queued messages with as few sendmmsg calls as the
// kernel allows. A message it refuses (an ICMP error queued for a
// departed viewer, say) is counted and skipped so it cannot hold back
// the others; the first refusal of GSO itself turns GSO off for the
// server and sends what is left one datagram per message.
func (snd *Sender) flush() error {
	res, err := snd.udp.Send((*directWriter)(snd.srv))
	if res.GSORefused {
		snd.srv.gso.Store(false)
	}
	st := &snd.srv.stats
	st.syscalls.Add(uint64(res.Syscalls))
	st.packetsSent.Add(uint64(res.Datagrams))
	st.messages.Add(uint64(res.Messages))
	st.sendErrors.Add(uint64(res.Dropped))
	return err
}

// split rewrites messages from off on as one message per slot, as flush
// does when the kernel refuses GSO.
func (snd *Sender) split(off int) { snd.udp.Split(off) }

// directWriter is the Server as the mmsg.Writer of its Senders: see
// sendDirect.
type directWriter Server

func (w *directWriter) Write(f func(fd uintptr) bool) error { return (*Server)(w).sendDirect(f) }

// sendDirect runs a Sender's sendmmsg (f) on the socket's descriptor
// without net's write lock, and through RawConn.Write only when the send
// buffer is full, to wait for room. The lock serialises every writer of
// the socket behind a semaphore: with hundreds of session writers on a
// few Ps, a holder preempted or a waiter woken late makes a convoy in
// which each send waits a trip through the run queue, and whole groups of
// viewers paused for 200-300 ms (a stall each at the viewer). The kernel
// takes concurrent sendmmsg calls on one UDP socket as they come.
func (s *Server) sendDirect(f func(fd uintptr) bool) error {
	s.fdMu.RLock()
	if s.fdClosed {
		s.fdMu.RUnlock()
		return net.ErrClosed
	}
	done := f(s.fd)
	s.fdMu.RUnlock()
	if done {
		return nil
	}
	return s.raw.Write(f)
}

// writeUDP sends one datagram to ap past net's write lock, like
// sendDirect: session writers send their sender reports this way, and
// must not queue behind a handshake's or the demultiplexer's write.
func (s *Server) writeUDP(b []byte, ap netip.AddrPort) error {
	var sa sockaddr
	n := sa.set(ap, s.inet6)
	s.fdMu.RLock()
	if s.fdClosed {
		s.fdMu.RUnlock()
		return net.ErrClosed
	}
	e := mmsg.SendTo(s.fd, b, (*mmsg.Sockaddr)(&sa), n)
	s.fdMu.RUnlock()
	switch e {
	case 0:
		return nil
	case syscall.EAGAIN: // a full send buffer: wait for room in the poller
		_, err := s.conn.WriteToUDPAddrPort(b, ap)
		return err
	}
	return e
}
