package tsdemux

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// DefaultMaxUnitBytes is the default cap on the payload of one PES (one
// access unit) being assembled: a 4K IDR of a high-quality encode is
// rarely above 1.5 MiB, so 4 MiB stops only streams that never end a unit.
const DefaultMaxUnitBytes = 4 << 20

const (
	tsPacketSize = 188
	tsSync       = 0x47
	numPIDs      = 1 << 13
	nullPID      = 0x1fff
)

// unitCap bounds what mediacommon's reader holds for one PID. Its TS
// library (go-astits) keeps every packet of a PES until the next packet
// with a payload-unit start, so a stream that never sends one (endless
// PES) grows memory without end. unitCap sits in front of it, frames the
// bytes as its pre-demuxer does (resync on 0x47), counts payload bytes per
// PID since the last unit start and, past max, drops that PID's packets up
// to its next unit start.
//
// Dropping alone is not enough: astits would still hold everything up to
// the cap and hand it on as a truncated unit at the next start. So the
// packet that crosses the cap is passed with a continuity-counter jump,
// which makes astits discard what it holds for the PID, and the next unit
// start jumps again so the one packet passed is discarded too. The jumps
// are a constant shift of that PID's counters from then on, so real loss
// later is still seen as loss.
type unitCap struct {
	r     io.Reader
	max   int
	onCap func(pid uint16, bytes int)

	in    []byte // read buffer
	carry []byte // a partial packet (or garbage) from the last read
	out   []byte // filtered bytes not yet returned
	outAt int
	err   error // the source's error, returned once out is drained

	pids [numPIDs]pidState
	// restricted: only the PIDs follow named pass. Before it, what the TS
	// reader may hold on all PIDs together is bounded by the PMT search
	// limit; after it, each PID followed may hold up to max, and a sender
	// can name 8,191 PIDs.
	restricted bool
}

type pidState struct {
	bytes    int   // payload bytes since the last unit start
	dropping bool  // over the cap: drop up to the next unit start
	seen     bool  // a packet with payload was passed, lastCC is valid
	lastCC   uint8 // continuity counter of that packet, after shift
	shift    uint8 // added to the PID's counters (mod 16)
	followed bool  // passed once restricted
}

func newUnitCap(r io.Reader, max int, onCap func(pid uint16, bytes int)) *unitCap {
	return &unitCap{r: r, max: max, onCap: onCap,
		// One SRT message (7 packets) per read, as mediacommon's own
		// pre-demuxer reads, so the PMT search limit is met as closely;
		// the output never exceeds that plus one carried packet.
		in:  make([]byte, 7*tsPacketSize),
		out: make([]byte, 0, 8*tsPacketSize)}
}

func (u *unitCap) Read(p []byte) (int, error) {
	for u.outAt == len(u.out) {
		if u.err != nil {
			return 0, u.err
		}
		u.out, u.outAt = u.out[:0], 0
		n, err := u.r.Read(u.in)
		u.filter(u.in[:n])
		if err != nil {
			// What is left cannot become a packet: hand it on as it is,
			// as the pre-demuxer behind us decides what garbage is.
			u.out = append(u.out, u.carry...)
			u.carry = u.carry[:0]
			u.err = err
			if errors.Is(err, io.EOF) && len(u.out) == 0 {
				return 0, err
			}
		}
	}
	n := copy(p, u.out[u.outAt:])
	u.outAt += n
	return n, nil
}

// filter frames carry+in into packets and appends what passes to out.
func (u *unitCap) filter(in []byte) {
	data := in
	if len(u.carry) > 0 {
		u.carry = append(u.carry, in...)
		data = u.carry
	}
	i := 0
	for i < len(data) {
		j := bytes.IndexByte(data[i:], tsSync)
		if j < 0 {
			u.out = append(u.out, data[i:]...)
			i = len(data)
			break
		}
		u.out = append(u.out, data[i:i+j]...)
		i += j
		if len(data)-i < tsPacketSize {
			break
		}
		pkt := data[i : i+tsPacketSize]
		if u.pass(pkt) {
			u.out = append(u.out, pkt...)
		}
		i += tsPacketSize
	}
	rest := data[i:]
	if len(u.carry) > 0 {
		// rest aliases carry: move it to the front.
		u.carry = u.carry[:copy(u.carry, rest)]
	} else {
		u.carry = append(u.carry[:0], rest...)
	}
}

// follow restricts the packets passed to those of pids from now on.
func (u *unitCap) follow(pids []uint16) {
	for i := range u.pids {
		u.pids[i].followed = false
	}
	for _, pid := range pids {
		u.pids[pid&(numPIDs-1)].followed = true
	}
	u.restricted = true
}

// pass decides one packet and may rewrite its continuity counter.
func (u *unitCap) pass(pkt []byte) bool {
	pid := uint16(pkt[1]&0x1f)<<8 | uint16(pkt[2])
	if pid == nullPID {
		return false // padding, which the TS reader would assemble
	}
	st := &u.pids[pid]
	if u.restricted && !st.followed {
		return false
	}
	afc := pkt[3] >> 4 & 3
	if st.shift != 0 {
		pkt[3] = pkt[3]&0xf0 | (pkt[3]+st.shift)&0x0f
	}
	if afc&1 == 0 {
		return true // no payload: astits ignores it, and so the cap
	}
	size := 184
	if afc&2 != 0 {
		size = max(183-int(pkt[4]), 0)
	}
	if pkt[1]&0x40 != 0 {
		st.bytes = size
		if st.dropping {
			st.dropping = false
			u.jump(st, pkt)
		}
		st.note(pkt)
		return true
	}
	if st.dropping {
		return false
	}
	st.bytes += size
	if st.bytes > u.max {
		st.dropping = true
		u.jump(st, pkt)
		st.note(pkt)
		if u.onCap != nil {
			u.onCap(pid, st.bytes)
		}
		return true
	}
	st.note(pkt)
	return true
}

// jump rewrites pkt's counter two past the last one passed, which astits
// reads as a discontinuity (one past is continuity, equal is a duplicate),
// and keeps the shift for the packets after it.
func (u *unitCap) jump(st *pidState, pkt []byte) {
	if !st.seen {
		return // astits holds nothing of this PID
	}
	cc := pkt[3] & 0x0f
	want := (st.lastCC + 2) & 0x0f
	st.shift = (st.shift + want - cc) & 0x0f
	pkt[3] = pkt[3]&0xf0 | want
}

func (st *pidState) note(pkt []byte) {
	st.seen = true
	st.lastCC = pkt[3] & 0x0f
}

// capLogEvery spaces the unit-cap warnings: a stream that never ends a
// unit crosses the cap many times a second.
const capLogEvery = 10 * time.Second

// unitCapped runs on Run's goroutine (inside a read) when a PID's unit
// grew past the cap. A dropped video unit may be a reference picture, so
// the output skips to the next IDR.
func (d *Demuxer) unitCapped(pid uint16, n int) {
	d.unitsCapped.Add(1)
	d.decodeErrors.Add(1)
	err := fmt.Errorf("PES on PID %d grew past %d bytes without a new unit start; dropped to the next unit start", pid, d.maxUnit)
	if int(pid) == d.videoPID {
		d.skipToIDR(err)
	}
	dropped := d.capLog.Note("cap", struct{}{})
	if dropped == 0 {
		return
	}
	d.log.Warn("access unit too large, dropped up to the next unit start (a broken or hostile publisher; raise maxUnitBytes for the path if its pictures really are this large)",
		"pid", pid, "bytes", n, "maxUnitBytes", d.maxUnit, "dropped", dropped, "total", d.unitsCapped.Load())
}
