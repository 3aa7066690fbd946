package whepclient

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/pion/rtp"
	"github.com/pion/rtp/codecs"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/rtpseq"
)

// readBufSize is above any receive MTU pion is configured with in practice;
// a packet larger than the buffer would be lost by SRTP with ErrShortBuffer.
const readBufSize = 4096

// H.264 NAL unit types used on the packet path (RFC 6184 §5.4).
const (
	naluIDR   = 5
	naluSPS   = 7
	naluSTAPA = 24
	naluFUA   = 28
)

// receiver is the state of the read goroutine. Nothing in it is shared
// except through statsState, so the per-packet path takes no locks.
type receiver struct {
	log    *slog.Logger
	st     *statsState
	decode bool
	onAU   func(AccessUnit)
	// offeredH265: the offer had H.265; h265: the server answered it.
	offeredH265, h265 bool

	buf []byte
	hdr rtp.Header
	seq rtpseq.Window

	gotFirst  bool
	gotIDR    bool
	keyTSSet  bool
	lastKeyTS uint32
	// lostBeforePadding: packets went missing before a padding-only one.
	lostBeforePadding bool

	asm assembler
}

func (r *receiver) init(s *Session, opt Options) {
	r.log = s.log
	r.st = &s.stats
	r.decode = opt.Decode
	r.onAU = opt.OnAccessUnit
	r.offeredH265 = opt.H265
	r.buf = make([]byte, readBufSize)
}

func (r *receiver) readLoop(t *webrtc.TrackRemote) error {
	switch mime := t.Codec().MimeType; {
	case strings.EqualFold(mime, webrtc.MimeTypeH265) && r.offeredH265:
		r.h265 = true
	case !strings.EqualFold(mime, webrtc.MimeTypeH264):
		return fmt.Errorf("whepclient: server sent %q, which was not offered", mime)
	}
	for {
		n, _, err := t.Read(r.buf)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("whepclient: remote track ended")
			}
			return fmt.Errorf("whepclient: read RTP: %w", err)
		}
		r.handle(r.buf[:n])
	}
}

// handle accounts for one RTP packet. In non-decode mode it must not
// allocate: whep-loadgen runs it for hundreds of sessions.
func (r *receiver) handle(pkt []byte) {
	hl, err := r.hdr.Unmarshal(pkt)
	if err != nil {
		r.log.Debug("bad RTP header", "err", err)
		return
	}
	end := len(pkt)
	if r.hdr.Padding && end > hl {
		end -= int(pkt[end-1])
	}
	if end < hl {
		r.log.Debug("RTP padding longer than payload")
		return
	}
	payload := pkt[hl:end]

	st := r.st
	st.packets.Add(1)
	st.bytes.Add(uint64(len(pkt)))
	if !r.gotFirst {
		r.gotFirst = true
		st.setFirstPacket(time.Now())
	}

	res := r.seq.Push(r.hdr.SequenceNumber)
	switch {
	case res.Dup:
		st.dups.Add(1)
		return
	case res.Late:
		st.reordered.Add(1)
		if res.Recovered {
			st.seqGaps.Add(^uint64(0))
		}
	case res.Missing > 0:
		st.seqGaps.Add(uint64(res.Missing))
	}

	if len(payload) == 0 {
		// Padding only (a sender's bandwidth probe): it keeps the
		// sequence whole and carries nothing; a loss just before it
		// belongs to the next picture's packets.
		r.lostBeforePadding = r.lostBeforePadding || res.Missing > 0
		return
	}
	lost := res.Missing > 0 || r.lostBeforePadding
	r.lostBeforePadding = false

	if r.hdr.Marker {
		st.frames.Add(1)
	}
	if r.startsKey(payload) && (!r.keyTSSet || r.hdr.Timestamp != r.lastKeyTS) {
		r.keyTSSet, r.lastKeyTS = true, r.hdr.Timestamp
		st.keyframes.Add(1)
		if !r.gotIDR {
			r.gotIDR = true
			st.setFirstIDR(time.Now())
		}
	}

	// A late packet belongs to a picture the assembler already gave up on.
	if r.decode && !res.Late {
		r.assemble(payload, lost)
	}
}

// startsIDR reports whether an RTP payload carries the start of an IDR
// slice: a single NAL unit of type 5, a STAP-A holding one, or the first
// fragment of an FU-A of type 5. Only NAL headers are looked at.
func startsIDR(p []byte) bool {
	if len(p) == 0 {
		return false
	}
	switch p[0] & 0x1f {
	case naluIDR:
		return true
	case naluSTAPA:
		for off := 1; off+2 < len(p); {
			size := int(binary.BigEndian.Uint16(p[off:]))
			if size == 0 {
				return false
			}
			if p[off+2]&0x1f == naluIDR {
				return true
			}
			off += 2 + size
		}
	case naluFUA:
		return len(p) >= 2 && p[1]&0x80 != 0 && p[1]&0x1f == naluIDR
	}
	return false
}

// assembler rebuilds access units in Decode mode. A picture during which a
// packet went missing is dropped whole, since a decoder could not use it.
type assembler struct {
	depack codecs.H264Packet
	// depack265 replaces depack on an H.265 track.
	depack265 codecs.H265Depacketizer
	active    bool
	broken    bool
	ts        uint32
	firstSeq  uint16
	lastSeq   uint16
	nalus     [][]byte
	lastSPS   []byte
}

func (r *receiver) assemble(payload []byte, lost bool) {
	a := &r.asm
	if a.active && r.hdr.Timestamp != a.ts {
		// The previous picture had no marker; if packets were lost just
		// now, its tail may be among them.
		if lost {
			a.broken = true
		}
		r.flushAU()
	}
	if !a.active {
		a.active = true
		a.broken = lost // the head of this picture may be what was lost
		a.ts = r.hdr.Timestamp
		a.firstSeq = r.hdr.SequenceNumber
		a.nalus = nil
		a.depack = codecs.H264Packet{IsAVC: true}
		a.depack265 = codecs.H265Depacketizer{}
	} else if lost {
		a.broken = true
	}
	a.lastSeq = r.hdr.SequenceNumber

	if !a.broken && r.h265 {
		r.assembleH265(payload)
	} else if !a.broken {
		out, err := a.depack.Unmarshal(payload)
		if err != nil {
			r.log.Debug("bad H.264 RTP payload", "err", err)
			a.broken = true
		} else if a.nalus, err = appendAVC(a.nalus, out); err != nil {
			r.log.Debug("bad H.264 RTP payload", "err", err)
			a.broken = true
		}
	}
	if r.hdr.Marker {
		r.flushAU()
	}
}

// appendAVC splits length-prefixed NAL units, as H264Packet emits them with
// IsAVC set, without copying: the depacketizer allocated out for us.
func appendAVC(nalus [][]byte, out []byte) ([][]byte, error) {
	for len(out) > 0 {
		if len(out) < 4 {
			return nalus, errors.New("truncated NAL length")
		}
		n := binary.BigEndian.Uint32(out)
		out = out[4:]
		if uint64(n) > uint64(len(out)) || n == 0 {
			return nalus, fmt.Errorf("NAL length %d exceeds payload %d", n, len(out))
		}
		nalus = append(nalus, out[:n:n])
		out = out[n:]
	}
	return nalus, nil
}

func (r *receiver) flushAU() {
	a := &r.asm
	a.active = false
	if a.broken {
		r.st.brokenAUs.Add(1)
		return
	}
	if len(a.nalus) == 0 {
		return
	}
	au := AccessUnit{
		NALUs:        a.nalus,
		RTPTimestamp: a.ts,
		FirstSeq:     a.firstSeq,
		LastSeq:      a.lastSeq,
		Received:     time.Now(),
		H265:         r.h265,
	}
	a.nalus = nil
	if r.h265 {
		r.describeH265(&au)
	} else {
		r.describeH264(&au)
	}
	r.st.decodedAUs.Add(1)
	if au.IDR {
		r.st.idrs.Add(1)
	}
	if r.onAU != nil {
		r.onAU(au)
	}
}

// describeH264 marks an IDR and takes the picture size from its SPS.
func (r *receiver) describeH264(au *AccessUnit) {
	for _, n := range au.NALUs {
		switch n[0] & 0x1f {
		case naluIDR:
			au.IDR = true
		case naluSPS:
			r.parseSPS(n)
		}
	}
}

func (r *receiver) parseSPS(n []byte) {
	if bytes.Equal(n, r.asm.lastSPS) {
		return
	}
	var sps h264.SPS
	if err := sps.Unmarshal(n); err != nil {
		r.log.Warn("cannot parse SPS", "err", err)
		return
	}
	r.asm.lastSPS = bytes.Clone(n)
	r.st.setSize(sps.Width(), sps.Height())
}
