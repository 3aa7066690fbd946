//go:build !linux

package mediaplane

import "net/netip"

// sendState remembers each UDP slot's destination where sendmmsg and GSO
// are missing.
type sendState struct {
	slots []int
	dst   []netip.AddrPort
}

func (snd *Sender) initSend(packets int) {
	snd.slots = make([]int, 0, packets)
	snd.dst = make([]netip.AddrPort, packets)
}

func (snd *Sender) add(r *peerAddr, slot int, _ bool) {
	snd.slots = append(snd.slots, slot)
	snd.dst[slot] = r.ap
}

func (snd *Sender) flush() error {
	st := &snd.srv.stats
	for _, i := range snd.slots {
		st.syscalls.Add(1)
		at := i * slotSize
		if _, err := snd.srv.conn.WriteToUDPAddrPort(snd.buf[at:at+snd.lens[i]], snd.dst[i]); err != nil {
			st.sendErrors.Add(1)
			continue
		}
		st.packetsSent.Add(1)
		st.messages.Add(1)
	}
	snd.slots = snd.slots[:0]
	return nil
}

func (s *Server) writeUDP(b []byte, ap netip.AddrPort) error {
	_, err := s.conn.WriteToUDPAddrPort(b, ap)
	return err
}
