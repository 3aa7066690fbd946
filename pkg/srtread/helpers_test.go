package srtread

import (
	"bytes"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/srt"
)

func TestMain(m *testing.M) { testkit.Main(m, srt.Init, srt.Cleanup) }

// A minimal H.264 picture: what the writer and the reader look at is the
// NAL unit types (IDR or not), not the slice contents.
var (
	testSPS = []byte{0x67, 0x42, 0xc0, 0x1e, 0xd9, 0x00, 0xa0, 0x47, 0xfe, 0xc8}
	testPPS = []byte{0x68, 0xce, 0x3c, 0x80}
)

func mkVideo(pts int64, idr bool) *av.AccessUnit {
	if idr {
		return &av.AccessUnit{PTS: pts, IDR: true, NALUs: [][]byte{testSPS, testPPS, {0x65, 0x88, 0x84, byte(pts)}}}
	}
	return &av.AccessUnit{PTS: pts, NALUs: [][]byte{{0x41, 0x9a, 0x02, byte(pts)}}}
}

// Tracks and units of the three source codecs. The AAC config is real
// (LC, 48 kHz, stereo); the MP2 frame is a real layer II header (48 kHz,
// 128 kbit/s) padded to its length; the Opus packet is a 20 ms CELT one.
func aacTrack(t testing.TB) *av.AudioTrack {
	conf, err := (&mpeg4audio.AudioSpecificConfig{Type: mpeg4audio.ObjectTypeAACLC, SampleRate: 48000, ChannelCount: 2}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return &av.AudioTrack{Codec: av.AudioCodecAAC, SampleRate: 48000, Channels: 2, Config: conf}
}

var (
	mp2Track  = &av.AudioTrack{Codec: av.AudioCodecMPEG1, SampleRate: 48000, Channels: 2, Layer: 2}
	opusTrack = &av.AudioTrack{Codec: av.AudioCodecOpus, SampleRate: 48000, Channels: 2}
)

// unitTicks is one audio unit's duration on the 90 kHz clock.
func unitTicks(tr *av.AudioTrack) int64 {
	switch tr.Codec {
	case av.AudioCodecAAC:
		return 1024 * av.ClockRate / 48000
	case av.AudioCodecMPEG1:
		return 1152 * av.ClockRate / 48000
	}
	return 960 * av.ClockRate / 48000
}

func mkUnit(tr *av.AudioTrack, pts int64, n int) *av.AudioUnit {
	var data []byte
	switch tr.Codec {
	case av.AudioCodecMPEG1:
		data = make([]byte, 384)
		copy(data, []byte{0xff, 0xfd, 0x84, 0x00})
		data[100] = byte(n)
	case av.AudioCodecOpus:
		data = []byte{0xfc, 0xff, byte(n)}
	default:
		data = []byte{0x21, 0x10, 0x04, byte(n), byte(n >> 8)}
	}
	return &av.AudioUnit{PTS: pts, Data: data, Track: tr}
}

// stream builds what a publisher writes: pictures at 30 fps with an IDR
// every gop, and units of tr (nil: none) in PTS order among them, each
// after the picture it plays with.
type stream struct {
	frames []hub.Frame
	units  []*av.AudioUnit
}

func mkStream(gen uint32, start int64, pictures, gop int, tr *av.AudioTrack) stream {
	var s stream
	a := start
	n := 0
	for i := range pictures {
		pts := start + int64(i)*3000
		for tr != nil && a < pts {
			u := mkUnit(tr, a, n)
			s.frames = append(s.frames, hub.Frame{Source: u, Gen: gen})
			s.units = append(s.units, u)
			a += unitTicks(tr)
			n++
		}
		s.frames = append(s.frames, hub.Frame{Video: mkVideo(pts, i%gop == 0), Gen: gen})
	}
	return s
}

// capture is the messages a muxer sent.
type capture struct {
	msgs [][]byte
}

func (c *capture) send(msg []byte) error {
	c.msgs = append(c.msgs, bytes.Clone(msg))
	return nil
}

func (c *capture) bytes() []byte { return bytes.Join(c.msgs, nil) }

func newTestMuxer(announced bool) (*muxer, *capture) {
	c := &capture{}
	return newMuxer(newPacketizer(c.send), slog.New(slog.DiscardHandler), func() bool { return announced }), c
}

// feed writes frames as if they arrived every interval from at.
func feed(t *testing.T, m *muxer, frames []hub.Frame, at time.Time, interval time.Duration) time.Time {
	t.Helper()
	for _, f := range frames {
		if err := m.write(f, at); err != nil {
			t.Fatalf("write: %v", err)
		}
		at = at.Add(interval)
	}
	return at
}

// demuxed is what mediacommon's reader gets back from a TS.
type demuxed struct {
	audioCodec mpegts.Codec
	video      []int64 // PTS
	firstIDR   bool
	audio      [][]byte
	audioPTS   []int64
}

func demux(t *testing.T, data []byte) demuxed {
	t.Helper()
	r := &mpegts.Reader{R: bytes.NewReader(data)}
	if err := r.Initialize(); err != nil {
		t.Fatalf("reader: %v", err)
	}
	var d demuxed
	r.OnDecodeError(func(err error) { t.Errorf("decode error: %v", err) })
	for _, tr := range r.Tracks() {
		switch c := tr.Codec.(type) {
		case *mpegts.CodecH264:
			r.OnDataH264(tr, func(pts, _ int64, au [][]byte) error {
				if len(d.video) == 0 {
					d.firstIDR = au[0][0]&0x1f == 7 // SPS first: the IDR's parameter sets
				}
				d.video = append(d.video, pts)
				return nil
			})
		case *mpegts.CodecMPEG4Audio:
			d.audioCodec = c
			r.OnDataMPEG4Audio(tr, func(pts int64, aus [][]byte) error {
				for i, au := range aus {
					d.audio = append(d.audio, au)
					d.audioPTS = append(d.audioPTS, pts+int64(i)*1920)
				}
				return nil
			})
		case *mpegts.CodecMPEG1Audio:
			d.audioCodec = c
			r.OnDataMPEG1Audio(tr, func(pts int64, frames [][]byte) error {
				for i, f := range frames {
					d.audio = append(d.audio, f)
					d.audioPTS = append(d.audioPTS, pts+int64(i)*2160)
				}
				return nil
			})
		case *mpegts.CodecOpus:
			d.audioCodec = c
			r.OnDataOpus(tr, func(pts int64, packets [][]byte) error {
				for i, p := range packets {
					d.audio = append(d.audio, p)
					d.audioPTS = append(d.audioPTS, pts+int64(i)*1800)
				}
				return nil
			})
		}
	}
	for {
		if err := r.Read(); err != nil {
			break
		}
	}
	return d
}

// tsReport is what a byte-level walk over a TS finds: continuity errors,
// each PMT that differs from the one before, and the PES timestamps.
type tsReport struct {
	packets  int
	ccErrors []string
	pmts     []pmt
	pts      map[uint16][]int64
	rai      map[uint16][]bool // random access indicator of each PES start
}

type pmt struct {
	version int
	pcrPID  uint16
	streams []pmtStream
}

type pmtStream struct {
	typ byte
	pid uint16
}

func (p pmt) String() string { return fmt.Sprintf("v%d pcr=%d %v", p.version, p.pcrPID, p.streams) }

func walkTS(t *testing.T, data []byte) tsReport {
	t.Helper()
	if len(data)%tsPacketSize != 0 {
		t.Fatalf("%d bytes: not whole TS packets", len(data))
	}
	rep := tsReport{pts: map[uint16][]int64{}, rai: map[uint16][]bool{}}
	cc := map[uint16]int{}
	for off := 0; off < len(data); off += tsPacketSize {
		pkt := data[off : off+tsPacketSize]
		rep.packets++
		if pkt[0] != 0x47 {
			t.Fatalf("packet %d: sync byte %#x", rep.packets, pkt[0])
		}
		pid := uint16(pkt[1]&0x1f)<<8 | uint16(pkt[2])
		afc := pkt[3] >> 4 & 3
		if afc&1 != 0 {
			c := int(pkt[3] & 0xf)
			if last, ok := cc[pid]; ok && c != (last+1)&0xf {
				rep.ccErrors = append(rep.ccErrors, fmt.Sprintf("pid %d: %d after %d", pid, c, last))
			}
			cc[pid] = c
		}
		payload := pkt[4:]
		rai := false
		if afc&2 != 0 {
			rai = pkt[4] > 0 && pkt[5]&0x40 != 0
			payload = pkt[5+int(pkt[4]):]
		}
		if afc&1 == 0 || pkt[1]&0x40 == 0 {
			continue
		}
		switch {
		case pid == pmtPID:
			sec := payload[1+int(payload[0]):]
			length := 3 + (int(sec[1]&0x0f)<<8 | int(sec[2]))
			crc := uint32(sec[length-4])<<24 | uint32(sec[length-3])<<16 | uint32(sec[length-2])<<8 | uint32(sec[length-1])
			if mpegCRC(sec[:length-4]) != crc {
				t.Fatalf("PMT with a bad CRC: % x", sec[:length])
			}
			p := pmt{version: int(sec[5] >> 1 & 0x1f), pcrPID: uint16(sec[8]&0x1f)<<8 | uint16(sec[9])}
			es := sec[12+(int(sec[10]&0x0f)<<8|int(sec[11])) : length-4]
			for len(es) >= 5 {
				p.streams = append(p.streams, pmtStream{es[0], uint16(es[1]&0x1f)<<8 | uint16(es[2])})
				es = es[5+(int(es[3]&0x0f)<<8|int(es[4])):]
			}
			if n := len(rep.pmts); n == 0 || rep.pmts[n-1].String() != p.String() {
				rep.pmts = append(rep.pmts, p)
			}
		case pid >= videoPID && pid <= audioPIDB:
			if len(payload) < 14 || payload[0] != 0 || payload[1] != 0 || payload[2] != 1 {
				t.Fatalf("pid %d: PES start without a start code", pid)
			}
			h := payload[9:14]
			pts := int64(h[0]>>1&7)<<30 | int64(h[1])<<22 | int64(h[2]>>1)<<15 | int64(h[3])<<7 | int64(h[4]>>1)
			rep.pts[pid] = append(rep.pts[pid], pts)
			rep.rai[pid] = append(rep.rai[pid], rai)
		}
	}
	return rep
}
