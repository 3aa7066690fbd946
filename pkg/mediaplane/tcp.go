package mediaplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/srtwhep/srtwhep/pkg/connlimit"
	"github.com/srtwhep/srtwhep/pkg/plane"
)

// ICE-TCP (RFC 6544) is the fallback for viewers whose UDP is blocked: the
// viewer connects to a passive candidate and sends what it would send over
// UDP, each datagram framed by a two-byte length (RFC 4571). Every frame
// goes through the same dispatch as a UDP datagram; only the way back
// differs, which route carries. A connection belongs to the viewer whose
// check it carried first, and ends with it.
//
// Unlike UDP, a TCP write can block: a viewer on a link narrower than the
// stream fills its connection's send buffer. Media writes then block the
// sending goroutine, which is what a per-viewer writer wants (its queue
// fills and the viewer drops to the next IDR); the UDP demultiplexer never
// writes to a TCP connection.

// goodbyeWait bounds writes to an ICE-TCP viewer that is being closed: a
// viewer that reads nothing must not hold the goroutine that ends it.
const goodbyeWait = 200 * time.Millisecond

// acceptBackoff spaces Accept retries after a temporary failure (out of
// file descriptors, say), so the loop does not spin.
const acceptBackoff = 50 * time.Millisecond

// errTCPClosed ends a viewer whose media went over an ICE-TCP connection
// that closed: without it nothing reaches the viewer any more.
var errTCPClosed = fmt.Errorf("%w: its ICE-TCP connection closed", plane.ErrPeerClosed)

// tcpConn is one accepted ICE-TCP connection.
type tcpConn struct {
	srv  *Server
	conn *net.TCPConn
	ap   netip.AddrPort // the viewer's address, as UDP datagrams would carry it
	// release gives the connection's slot of the caps back (see
	// Server.tcpLimit), when it has ended.
	release func()

	// wmu keeps frames whole: media, control and goodbye writes come from
	// different goroutines. hdr and bufs are used under it.
	wmu  sync.Mutex
	hdr  [2]byte
	bufs net.Buffers
	vec  [2][]byte

	closeOnce sync.Once
}

// acceptTCP accepts ICE-TCP connections until the listener closes.
func (s *Server) acceptTCP() {
	ln := s.cfg.TCPListener
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("ICE-TCP accept failed; retrying", "err", err)
			select {
			case <-time.After(acceptBackoff):
			case <-s.ctx.Done():
				return
			}
			continue
		}
		tc, ok := nc.(*net.TCPConn)
		ap, ok2 := addrPortOf(nc.RemoteAddr())
		if !ok || !ok2 {
			_ = nc.Close()
			continue
		}
		_ = tc.SetNoDelay(true) // each frame is a datagram: no coalescing delay
		c := &tcpConn{srv: s, conn: tc, ap: ap}
		if !s.admitTCP(c) {
			connlimit.Refuse(tc)
			continue
		}
		s.spawn(func() { s.serveTCP(c) })
	}
}

// admitTCP registers c unless the server is closed or a cap of tcpLimit
// is reached.
func (s *Server) admitTCP(c *tcpConn) bool {
	release, ok := s.tcpLimit.Admit(c.ap.Addr())
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		release()
		return false
	}
	c.release = release
	s.tcpConns[c] = struct{}{}
	return true
}

func addrPortOf(a net.Addr) (netip.AddrPort, bool) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}, false
	}
	ap := ta.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}

// serveTCP reads one connection's RFC 4571 frames and dispatches them. A
// connection no check validated within the handshake timeout is closed;
// once it carries a viewer's checks, the viewer's consent timeout applies
// instead.
func (s *Server) serveTCP(c *tcpConn) {
	defer s.tcpEnded(c)
	d := newDemuxState()
	buf := make([]byte, maxDatagram)
	r := route{ap: c.ap, tcp: c}
	bound := false
	_ = c.conn.SetReadDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	var hdr [2]byte
	for {
		frame, err := readFrame(c.conn, &hdr, buf)
		if errors.Is(err, errFrameTooLarge) {
			s.stats.datagrams.Add(1)
			s.stats.malformed.Add(1)
			return
		}
		if err != nil {
			return
		}
		s.dispatchSafe(d, frame, r, time.Now().UnixNano())
		if !bound && s.viewerAt(r) != nil {
			bound = true
			_ = c.conn.SetReadDeadline(time.Time{})
		}
	}
}

// errFrameTooLarge ends an ICE-TCP connection whose frame is longer than
// any datagram of ours: skipping it would trust the rest of the stream,
// and the framing is lost.
var errFrameTooLarge = errors.New("mediaplane: ICE-TCP frame longer than any datagram")

// readFrame reads one RFC 4571 frame into buf, which holds maxDatagram
// bytes, using hdr for its length. It returns io.EOF only between
// frames; a stream that ends inside one gives io.ErrUnexpectedEOF.
func readFrame(r io.Reader, hdr *[2]byte, buf []byte) ([]byte, error) {
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint16(hdr[:]))
	if n > len(buf) {
		return nil, errFrameTooLarge
	}
	if _, err := io.ReadFull(r, buf[:n]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // the header was read: inside a frame
		}
		return nil, err
	}
	return buf[:n], nil
}

// tcpEnded forgets a connection that closed, and ends the viewer whose
// media went over it.
func (s *Server) tcpEnded(c *tcpConn) {
	c.close()
	c.release()
	r := route{ap: c.ap, tcp: c}
	s.mu.Lock()
	delete(s.tcpConns, c)
	v := s.byAddr[r]
	if v != nil {
		delete(s.byAddr, r)
		v.forgetAddr(r)
	}
	s.mu.Unlock()
	if v != nil {
		if cur := v.remote.Load(); cur != nil && cur.route == r {
			v.end(errTCPClosed)
		}
	}
}

// write sends b as one frame; it blocks while the connection's send
// buffer is full.
func (c *tcpConn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	binary.BigEndian.PutUint16(c.hdr[:], uint16(len(b)))
	c.vec[0], c.vec[1] = c.hdr[:], b
	c.bufs = c.vec[:]
	_, err := c.bufs.WriteTo(c.conn)
	if err != nil {
		// A partial frame leaves the stream unreadable: end it.
		c.close()
	}
	return err
}

// writeRun sends the encrypted slots of one viewer's frame, each as a
// frame, with one writev; it blocks while the send buffer is full, which
// is how a narrow link slows down the viewer's writer.
func (c *tcpConn) writeRun(snd *Sender, run tcpRun) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	snd.tcpVec = snd.tcpVec[:0]
	for slot := run.first; slot < run.first+run.n; slot++ {
		h := snd.tcpHdrs[2*slot : 2*slot+2]
		binary.BigEndian.PutUint16(h, uint16(snd.lens[slot]))
		at := slot * slotSize
		snd.tcpVec = append(snd.tcpVec, h, snd.buf[at:at+snd.lens[slot]])
	}
	bufs := net.Buffers(snd.tcpVec)
	_, err := bufs.WriteTo(c.conn)
	if err != nil {
		c.close()
	}
	return err
}

// limitWrites makes writes in progress, and later ones, give up after d.
func (c *tcpConn) limitWrites(d time.Duration) {
	_ = c.conn.SetWriteDeadline(time.Now().Add(d))
}

func (c *tcpConn) close() {
	c.closeOnce.Do(func() { _ = c.conn.Close() })
}
