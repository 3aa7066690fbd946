package mediaplane

import (
	"errors"
	"fmt"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/rtpstamp"
)

// DefaultSenderPackets is a Sender's capacity unless NewSender is told
// otherwise: a 720p IDR frame (~100 packets) to ten viewers, or a P-frame
// to a hundred, per system call. Each packet slot costs slotSize bytes.
const DefaultSenderPackets = 1024

// slotSize holds one SRTP packet: a header, a payload under the path MTU
// and the authentication tag.
const slotSize = 1500

// maxSRTPOverhead is the largest tag a negotiated profile adds
// (AEAD_AES_128_GCM's 16 bytes; AES_CM_HMAC_SHA1_80 adds 10).
const maxSRTPOverhead = 16

// MaxPayload is the largest RTP payload a Sender takes, less what header
// extensions take.
const MaxPayload = slotSize - rtpstamp.HeaderLen - maxSRTPOverhead

// ErrNotConnected is returned when sending to a viewer that has no SRTP
// keys yet.
var ErrNotConnected = errors.New("mediaplane: viewer not connected")

// errRouteTCP refuses a pool worker's write to a viewer whose media moved
// to ICE-TCP during the step: the packets are lost like any on a route
// change (the viewer NACKs them), and the pool hands the viewer to a
// goroutine of its own after the step.
var errRouteTCP = errors.New("mediaplane: the viewer's media moved to ICE-TCP, which a pool worker does not write to")

// Sender encrypts frames into buffers it owns and sends them in batches.
// It belongs to one goroutine; any number of Senders may serve the same
// viewers (each viewer's SRTP context is locked once per frame).
type Sender struct {
	srv  *Server
	buf  []byte // slots of slotSize bytes
	lens []int  // encrypted length of each used slot
	used int    // slots in use
	hdr  rtp.Header
	sendState

	// ICE-TCP viewers' frames, written by Flush after the UDP messages:
	// runs of slots, their RFC 4571 length prefixes, and the writev
	// vector, all reused.
	tcpRuns []tcpRun
	tcpHdrs []byte
	tcpVec  [][]byte

	// udpOnly marks a pool worker's Sender, whose Flush serves many
	// viewers and so must never block: it refuses a viewer on ICE-TCP
	// (errRouteTCP), deciding on the very route its slots would go to,
	// so a nomination that moves the viewer between the pool's check and
	// the write cannot slip a blocking write in.
	udpOnly bool
}

// tcpRun is a run of consecutive slots bound for one ICE-TCP connection.
type tcpRun struct {
	c        *tcpConn
	first, n int
}

// NewSender returns a Sender holding up to packets packets between
// flushes (0 means DefaultSenderPackets); Queue flushes by itself when
// full.
func (s *Server) NewSender(packets int) *Sender {
	if packets <= 0 {
		packets = DefaultSenderPackets
	}
	snd := &Sender{srv: s, buf: make([]byte, packets*slotSize), lens: make([]int, packets)}
	snd.initSend(packets)
	if s.cfg.TCPListener != nil {
		snd.tcpHdrs = make([]byte, 2*packets)
	}
	return snd
}

// SendFrame queues the packets of one frame for v and sends everything
// queued.
func (snd *Sender) SendFrame(v *Viewer, pkts []rtp.Packet) error {
	if err := snd.Queue(v, pkts); err != nil {
		return err
	}
	return snd.Flush()
}

// Queue encrypts pkts for v into the Sender's buffer, grouped into as few
// UDP GSO messages as their sizes allow; nothing is sent before Flush
// unless the buffer fills. Each packet's header fields that a Stamper sets
// are written, and its extensions (no CSRCs or padding); its payload is only read,
// so payloads shared by all viewers stay intact.
func (snd *Sender) Queue(v *Viewer, pkts []rtp.Packet) error {
	for i := range pkts {
		// A header extension (the transport-wide sequence number) takes
		// from the payload's room.
		if n := len(pkts[i].Payload) + rtpstamp.HeaderSize(&pkts[i].Header) - rtpstamp.HeaderLen; n > MaxPayload {
			return fmt.Errorf("mediaplane: RTP payload of %d bytes and header extensions exceed %d", n, MaxPayload)
		}
	}
	r, err := snd.route(v)
	if err != nil {
		return err
	}
	for len(pkts) > 0 {
		if snd.used == len(snd.lens) {
			if err = snd.Flush(); err != nil {
				return err
			}
		}
		n := min(len(pkts), len(snd.lens)-snd.used)
		if err = snd.encrypt(v, r, pkts[:n]); err != nil {
			return err
		}
		pkts = pkts[n:]
	}
	return nil
}

// route is where v's packets queued now go: read once, since every slot
// of the write goes where this one reading says.
func (snd *Sender) route(v *Viewer) (*peerAddr, error) {
	r := v.remote.Load()
	switch {
	case r == nil:
		return nil, ErrNotConnected
	case r.tcp != nil && snd.udpOnly:
		return nil, errRouteTCP
	}
	return r, nil
}

// encrypt writes and encrypts pkts into free slots, in place: the slot's
// capacity leaves room for the tag, so pion/srtp neither allocates nor
// copies.
func (snd *Sender) encrypt(v *Viewer, r *peerAddr, pkts []rtp.Packet) error {
	v.sendMu.Lock()
	out := v.out
	if out == nil {
		v.sendMu.Unlock()
		if v.state.Load() == stateClosed {
			return plane.ErrClosed
		}
		return ErrNotConnected
	}
	var total uint64
	for i := range pkts {
		p := &pkts[i]
		at := snd.used * slotSize
		// Queue checked that header and payload fit the slot.
		hl := rtpstamp.MarshalHeader(snd.buf[at:at+slotSize], &p.Header)
		plain := snd.buf[at : at+hl+len(p.Payload) : at+slotSize]
		copy(plain[hl:], p.Payload)
		enc, err := out.EncryptRTP(plain[:0], plain, &snd.hdr)
		if err != nil {
			v.sendMu.Unlock()
			return fmt.Errorf("mediaplane: encrypt RTP: %w", err)
		}
		snd.lens[snd.used] = len(enc)
		if r.tcp != nil {
			snd.addTCP(r.tcp, snd.used, i == 0)
		} else {
			snd.add(r, snd.used, i == 0)
		}
		snd.used++
		total += uint64(len(enc))
	}
	v.sendMu.Unlock()
	v.packets.Add(uint64(len(pkts)))
	v.bytes.Add(total)
	return nil
}

// QueueRTCP encrypts pkts (a sender report) for v into a slot of its own
// and sends it with the rest of the batch at Flush: alone, each track's
// report, once a second per viewer, cost a sendto of its own.
func (snd *Sender) QueueRTCP(v *Viewer, pkts []rtcp.Packet) error {
	r, err := snd.route(v)
	if err != nil {
		return err
	}
	plain, err := rtcp.Marshal(pkts)
	if err != nil {
		return fmt.Errorf("mediaplane: marshal RTCP: %w", err)
	}
	// SRTCP adds its index and the tag.
	if len(plain)+4+maxSRTPOverhead > slotSize {
		return fmt.Errorf("mediaplane: RTCP of %d bytes does not fit a datagram", len(plain))
	}
	if snd.used == len(snd.lens) {
		if err := snd.Flush(); err != nil {
			return err
		}
	}
	at := snd.used * slotSize
	slot := snd.buf[at : at : at+slotSize]
	v.sendMu.Lock()
	out := v.out
	if out == nil {
		v.sendMu.Unlock()
		return plane.ErrClosed
	}
	enc, err := out.EncryptRTCP(slot, plain, nil)
	v.sendMu.Unlock()
	if err != nil {
		return fmt.Errorf("mediaplane: encrypt RTCP: %w", err)
	}
	// The slot has room for the tag, so pion/srtp wrote into it; copy
	// in case a future version does not.
	n := copy(snd.buf[at:at+slotSize], enc)
	snd.lens[snd.used] = n
	if r.tcp != nil {
		snd.addTCP(r.tcp, snd.used, true)
	} else {
		snd.add(r, snd.used, true)
	}
	snd.used++
	return nil
}

// addTCP adds the slot to the current run of c's frame, or starts one.
func (snd *Sender) addTCP(c *tcpConn, slot int, frameStart bool) {
	if n := len(snd.tcpRuns); !frameStart && n > 0 {
		if r := &snd.tcpRuns[n-1]; r.c == c && r.first+r.n == slot {
			r.n++
			return
		}
	}
	snd.tcpRuns = append(snd.tcpRuns, tcpRun{c: c, first: slot, n: 1})
}

// Flush sends everything queued; datagrams the kernel refuses are
// counted in Stats.SendErrors, not returned. The error is non-nil only
// when the socket is closed. Frames of ICE-TCP viewers go last, each with
// one blocking writev: a viewer whose link is full holds up the caller
// (see tcp.go), so a Sender that serves many viewers should serve TCP
// ones apart.
func (snd *Sender) Flush() error {
	err := snd.flush()
	st := &snd.srv.stats
	for i, run := range snd.tcpRuns {
		st.syscalls.Add(1)
		if run.c.writeRun(snd, run) != nil {
			st.sendErrors.Add(uint64(run.n))
		} else {
			st.packetsSent.Add(uint64(run.n))
			st.messages.Add(1)
		}
		snd.tcpRuns[i] = tcpRun{}
	}
	snd.tcpRuns = snd.tcpRuns[:0]
	snd.used = 0
	return err
}
