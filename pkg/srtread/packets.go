package srtread

import "errors"

const (
	tsPacketSize = 188
	// packetsPerMessage TS packets make one SRT message: 1316 bytes, what
	// SRT live mode carries by default and what players expect.
	packetsPerMessage = 7
	messageSize       = packetsPerMessage * tsPacketSize
	// pmtPID is where mediacommon's writer (astits) puts the PMT.
	pmtPID = 0x1000
)

// errPartialPacket means the muxer ended a write in the middle of a TS
// packet, which mediacommon's writer never does; sending it would
// misalign every packet after it.
var errPartialPacket = errors.New("MPEG-TS writer stopped inside a packet")

// packetizer is the io.Writer under the MPEG-TS writer: it cuts the
// stream into SRT messages of 7 TS packets and keeps it continuous when
// the writer is replaced. A writer has fixed tracks, so a publisher
// change that brings other tracks needs a new one, which starts its
// continuity counters and its PMT version from zero; a player would read
// that as lost packets and, with the PMT version unchanged, might never
// look at the new PMT (VLC does not). So every packet gets its PID's next
// continuity counter here, and every PMT the version of the current
// program.
type packetizer struct {
	send func(msg []byte) error

	msg   [messageSize]byte
	n     int // bytes in msg
	fixed int // bytes of msg already renumbered: whole packets
	err   error

	cc      map[uint16]uint8 // the last continuity counter sent per PID
	version uint8            // PMT version_number of the current program (5 bits)
	started bool             // a program has been announced
}

func newPacketizer(send func([]byte) error) *packetizer {
	return &packetizer{send: send, cc: map[uint16]uint8{}}
}

// newProgram makes the PMTs from now on carry the next version number;
// call it for every writer after the first.
func (p *packetizer) newProgram() {
	if p.started {
		p.version = (p.version + 1) & 0x1f
	}
	p.started = true
}

// Write takes the writer's output in whatever pieces it comes.
func (p *packetizer) Write(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	total := len(b)
	for len(b) > 0 {
		k := copy(p.msg[p.n:], b)
		b = b[k:]
		p.n += k
		for ; p.fixed+tsPacketSize <= p.n; p.fixed += tsPacketSize {
			p.fix(p.msg[p.fixed : p.fixed+tsPacketSize])
		}
		if p.n == messageSize {
			if err := p.flushFull(); err != nil {
				return total - len(b), err
			}
		}
	}
	return total, nil
}

// Flush sends the packets waiting for a full message: at the live edge a
// frame should not wait for the next one to fill its last message.
func (p *packetizer) Flush() error {
	if p.err != nil {
		return p.err
	}
	if p.n%tsPacketSize != 0 {
		p.err = errPartialPacket
		return p.err
	}
	if p.n == 0 {
		return nil
	}
	return p.flushFull()
}

// KeepAlive sends what waits, then one null packet (PID 0x1fff, ISO
// 13818-1 2.4.3.3) in a message of its own, which every demuxer discards.
// Its continuity counter means nothing to a decoder, but counting it like
// any PID keeps strict stream checkers quiet.
func (p *packetizer) KeepAlive() error {
	if err := p.Flush(); err != nil {
		return err
	}
	p.n = copy(p.msg[:], nullPacket[:])
	p.fix(p.msg[:tsPacketSize])
	return p.flushFull()
}

// nullPacket is a null packet with a payload of stuffing bytes.
var nullPacket = func() (pkt [tsPacketSize]byte) {
	for i := range pkt {
		pkt[i] = 0xff
	}
	pkt[0], pkt[1], pkt[2], pkt[3] = 0x47, 0x1f, 0xff, 0x10
	return pkt
}()

func (p *packetizer) flushFull() error {
	err := p.send(p.msg[:p.n])
	p.n, p.fixed = 0, 0
	if err != nil {
		p.err = err
	}
	return err
}

// fix renumbers one complete TS packet (ISO 13818-1 2.4.3.2): the
// continuity counter counts packets with payload per PID and stays put on
// adaptation-only ones; and a PMT gets the program's version.
func (p *packetizer) fix(pkt []byte) {
	pid := uint16(pkt[1]&0x1f)<<8 | uint16(pkt[2])
	afc := pkt[3] >> 4 & 0x3
	last, seen := p.cc[pid]
	cc := last
	if afc&1 != 0 {
		cc = (last + 1) & 0xf
		if !seen {
			cc = 0
		}
	}
	p.cc[pid] = cc
	pkt[3] = pkt[3]&0xf0 | cc
	if pid == pmtPID && pkt[1]&0x40 != 0 && afc&1 != 0 {
		p.stampPMT(pkt)
	}
}

// stampPMT sets the version of a PMT section that starts and ends in pkt
// (ours always do: two tracks take some 40 bytes) and recomputes its CRC.
func (p *packetizer) stampPMT(pkt []byte) {
	off := 4
	if pkt[3]&0x20 != 0 {
		off += 1 + int(pkt[4])
	}
	if off >= len(pkt) {
		return
	}
	off += 1 + int(pkt[off]) // pointer_field
	if off+8 > len(pkt) || pkt[off] != 0x02 {
		return
	}
	sec := pkt[off:]
	length := 3 + (int(sec[1]&0x0f)<<8 | int(sec[2]))
	if length > len(sec) || length < 12 {
		return
	}
	sec[5] = sec[5]&0xc1 | p.version<<1
	crc := mpegCRC(sec[:length-4])
	sec[length-4], sec[length-3], sec[length-2], sec[length-1] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
}

// mpegCRC is CRC-32/MPEG-2, which PSI sections end with: the IEEE
// polynomial most significant bit first (hash/crc32 only does it
// reflected), initial value all ones, no final XOR. A PMT is some 40 bytes
// a few times a second, so bitwise is fast enough.
func mpegCRC(b []byte) uint32 {
	crc := uint32(0xffffffff)
	for _, c := range b {
		crc ^= uint32(c) << 24
		for range 8 {
			if crc&0x80000000 != 0 {
				crc = crc<<1 ^ 0x04c11db7
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
