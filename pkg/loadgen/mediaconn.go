package loadgen

import (
	"net"
	"net/netip"
	"sync/atomic"
	"time"
)

// counters are written by one socket-reading goroutine and read by
// snapshots from anywhere; atomics keep the per-packet path lock-free.
type counters struct {
	packets, bytes, frames   atomic.Uint64
	gaps, reordered, dups    atomic.Uint64
	ssrcChanges              atomic.Uint64
	firstPacket, lastPacket  atomic.Int64 // unix nanoseconds, 0 = none
	rtcp, stun, dtls, others atomic.Uint64
}

// seqWindow tracks which of the last 64 sequence numbers arrived, so a late
// packet (reordering) can be told from a duplicate without allocating.
type seqWindow struct {
	started bool
	highest uint16
	seen    uint64 // bit i set: highest-i arrived
}

// push returns the change in the number of missing packets and whether the
// packet was late or a duplicate.
func (w *seqWindow) push(seq uint16) (missing int, late, dup bool) {
	if !w.started {
		// Numbers before the first packet were never expected.
		w.started, w.highest, w.seen = true, seq, ^uint64(0)
		return 0, false, false
	}
	d := int(int16(seq - w.highest)) // wrap-around 65535→0 is a step forward
	switch {
	case d > 0:
		if d >= 64 {
			w.seen = 0
		} else {
			w.seen <<= uint(d)
		}
		w.seen |= 1
		w.highest = seq
		return d - 1, false, false
	case d == 0:
		return 0, false, true
	}
	back := -d
	if back >= 64 {
		return 0, true, false // counted missing long ago; stays so
	}
	bit := uint64(1) << uint(back)
	if w.seen&bit != 0 {
		return 0, false, true
	}
	w.seen |= bit
	return -1, true, false
}

// mediaConn is the UDP socket of one session, placed under pion's ICE UDP
// mux. Every datagram is classified on the way in; RTP media is counted
// from its clear header and, in light mode, swallowed so that pion never
// spends a cycle decrypting it. STUN, DTLS and RTCP pass through, which
// keeps ICE consent, the DTLS handshake and sender reports working.
//
// ReadFromAddrPort is called by exactly one goroutine (the mux's worker),
// which owns seq and ssrc; only counters are shared.
type mediaConn struct {
	conn    *net.UDPConn
	swallow bool
	c       *counters

	seq      seqWindow
	ssrc     uint32
	haveSSRC bool
}

func newMediaConn(conn *net.UDPConn, swallow bool, c *counters) *mediaConn {
	return &mediaConn{conn: conn, swallow: swallow, c: c}
}

// ReadFromAddrPort is the allocation-free read pion's UDP mux prefers.
func (m *mediaConn) ReadFromAddrPort(b []byte) (int, netip.AddrPort, error) {
	for {
		n, addr, err := m.conn.ReadFromUDPAddrPort(b)
		if err != nil {
			return n, addr, err
		}
		if m.inspect(b[:n]) || !m.swallow {
			return n, addr, nil
		}
	}
}

// inspect accounts for one datagram and reports whether it is something
// other than RTP media (and so must always reach pion).
func (m *mediaConn) inspect(p []byte) bool {
	c := m.c
	switch Classify(p) {
	case KindRTP:
	case KindRTCP:
		c.rtcp.Add(1)
		return true
	case KindSTUN:
		c.stun.Add(1)
		return true
	case KindDTLS:
		c.dtls.Add(1)
		return true
	default:
		c.others.Add(1)
		return true
	}
	h, _ := ParseRTPHeader(p)
	now := time.Now().UnixNano()
	if c.firstPacket.Load() == 0 {
		c.firstPacket.Store(now)
	}
	c.lastPacket.Store(now)
	c.packets.Add(1)
	c.bytes.Add(uint64(len(p)))
	if m.haveSSRC && h.SSRC != m.ssrc {
		// A new stream (server-side restart of the sender); its numbers
		// are unrelated to the old ones.
		c.ssrcChanges.Add(1)
		m.seq = seqWindow{}
	}
	m.ssrc, m.haveSSRC = h.SSRC, true
	missing, late, dup := m.seq.push(h.Seq)
	switch {
	case dup:
		c.dups.Add(1)
		return false
	case late:
		c.reordered.Add(1)
	}
	if missing > 0 {
		c.gaps.Add(uint64(missing))
	} else if missing < 0 {
		c.gaps.Add(^uint64(0)) // a late packet filled a counted gap
	}
	if h.Marker {
		c.frames.Add(1)
	}
	return false
}

// WriteToAddrPort is the allocation-free write pion's UDP mux prefers.
func (m *mediaConn) WriteToAddrPort(b []byte, addr netip.AddrPort) (int, error) {
	return m.conn.WriteToUDPAddrPort(b, addr)
}

// ReadFrom satisfies net.PacketConn; the mux uses ReadFromAddrPort.
func (m *mediaConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := m.ReadFromAddrPort(b)
	if err != nil {
		return n, nil, err
	}
	return n, net.UDPAddrFromAddrPort(addr), nil
}

func (m *mediaConn) WriteTo(b []byte, addr net.Addr) (int, error) { return m.conn.WriteTo(b, addr) }
func (m *mediaConn) Close() error                                 { return m.conn.Close() }
func (m *mediaConn) LocalAddr() net.Addr                          { return m.conn.LocalAddr() }
func (m *mediaConn) SetDeadline(t time.Time) error                { return m.conn.SetDeadline(t) }
func (m *mediaConn) SetReadDeadline(t time.Time) error            { return m.conn.SetReadDeadline(t) }
func (m *mediaConn) SetWriteDeadline(t time.Time) error           { return m.conn.SetWriteDeadline(t) }
