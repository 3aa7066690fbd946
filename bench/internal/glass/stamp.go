// Package glass measures glass-to-glass latency: a generator writes each
// frame's creation time into its pixels, the frame travels through a real
// encoder, SRT, the server and WebRTC, and the receiver decodes the pixels
// back and compares them with when the frame's last packet arrived.
//
// Pixels rather than metadata because nothing on the way may carry them
// for us: x264, MPEG-TS, the demuxer and the RTP packetizer all keep the
// picture and may drop or rewrite everything else (timestamps are rebased
// twice). Blocks of 16×16 luma samples, aligned to H.264 macroblocks and
// either black or white, survive any sane bitrate exactly.
package glass

import (
	"encoding/binary"
	"hash/crc32"
	"time"
)

const (
	// Block is the side of one bit's square, in pixels: one macroblock.
	Block = 16
	// stampBits is the creation time (64, Unix microseconds), the frame
	// number (16) and a check (16) over the two, so a damaged picture is
	// refused instead of read as a wrong time.
	stampBits = 96

	black, white = 16, 235 // video-range luma
)

// Stamp is what one frame carries.
type Stamp struct {
	Created time.Time // when the generator made the frame
	Seq     uint16    // frame number, to keep decoded frames and packets in step
}

// MinWidth is the narrowest frame that holds a stamp in its top rows.
const MinWidth = Block * 8

// Rows is how many pixel rows from the top a stamp covers at width w.
func Rows(w int) int {
	perRow := w / Block
	return (stampBits + perRow - 1) / perRow * Block
}

func (s Stamp) bits() [12]byte {
	var b [12]byte
	binary.BigEndian.PutUint64(b[0:], uint64(s.Created.UnixMicro()))
	binary.BigEndian.PutUint16(b[8:], s.Seq)
	binary.BigEndian.PutUint16(b[10:], uint16(crc32.ChecksumIEEE(b[:10])))
	return b
}

// Draw writes s into the top rows of a luma plane of width w (stride w).
func (s Stamp) Draw(y []byte, w int) {
	b := s.bits()
	perRow := w / Block
	for i := range stampBits {
		v := byte(black)
		if b[i/8]&(0x80>>(i%8)) != 0 {
			v = white
		}
		x0, y0 := (i%perRow)*Block, (i/perRow)*Block
		for yy := y0; yy < y0+Block; yy++ {
			row := y[yy*w+x0 : yy*w+x0+Block]
			for k := range row {
				row[k] = v
			}
		}
	}
}

// Read decodes a stamp from a decoded luma plane of width w. It samples
// the middle of each block, away from the edges that deblocking and
// quantisation smear, and refuses a stamp whose check does not match.
func Read(y []byte, w int) (Stamp, bool) {
	perRow := w / Block
	if perRow < MinWidth/Block || len(y) < w*Rows(w) {
		return Stamp{}, false
	}
	var b [12]byte
	for i := range stampBits {
		x0, y0 := (i%perRow)*Block+Block/4, (i/perRow)*Block+Block/4
		sum := 0
		for yy := y0; yy < y0+Block/2; yy++ {
			for xx := x0; xx < x0+Block/2; xx++ {
				sum += int(y[yy*w+xx])
			}
		}
		if sum/(Block*Block/4) > (black+white)/2 {
			b[i/8] |= 0x80 >> (i % 8)
		}
	}
	if binary.BigEndian.Uint16(b[10:]) != uint16(crc32.ChecksumIEEE(b[:10])) {
		return Stamp{}, false
	}
	return Stamp{
		Created: time.UnixMicro(int64(binary.BigEndian.Uint64(b[0:]))),
		Seq:     binary.BigEndian.Uint16(b[8:]),
	}, true
}
