// Package avcodec is the one FFmpeg binding: libavcodec decoders for the
// audio and video a publisher may send, the libx264 encoder, libswscale
// for pictures x264 cannot take and libswresample for sound Opus cannot
// take. pkg/audio and pkg/vtranscode build on it and hold no cgo of
// their own.
//
// Only these libraries and libavutil are linked: go-astiav linked
// libavformat, libavfilter and libavdevice as well, and Debian builds
// those against libsrt-gnutls, so the process held two libsrt copies
// beside srtgo's (openssl) one, with clashing symbols. None of the
// libraries here depends on libsrt.
//
// The C helpers exist where cgo cannot do the job: macros (AVERROR),
// compound literals (AV_CHANNEL_LAYOUT_STEREO), option strings set
// through av_opt, and arrays of pointers (frame planes, Go memory) that
// cgo cannot hand to C.
//
// Nothing here is safe for concurrent use: each Decoder, Encoder and
// Resampler belongs to one goroutine.
package avcodec

/*
#cgo pkg-config: libavcodec libavutil
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <libavcodec/avcodec.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/log.h>
#include <libavutil/mem.h>

enum {
	errAgain = AVERROR(EAGAIN),
	errEOF = AVERROR_EOF,
	errNoMem = AVERROR(ENOMEM),
};

// Bitstream readers may read AV_INPUT_BUFFER_PADDING_SIZE bytes past the
// end, which must be zeros: av_mallocz provides them.
static int set_extradata(AVCodecContext *dec, const uint8_t *data, int size) {
	dec->extradata = av_mallocz(size + AV_INPUT_BUFFER_PADDING_SIZE);
	if (!dec->extradata)
		return errNoMem;
	memcpy(dec->extradata, data, size);
	dec->extradata_size = size;
	return 0;
}

// The packet is a fresh padded, reference-counted copy: the decoder may
// keep a reference past the call, and C may not keep Go bytes.
static int send_packet(AVCodecContext *dec, AVPacket *pkt, const uint8_t *data, int size, int64_t pts) {
	int err = av_new_packet(pkt, size);
	if (err < 0)
		return err;
	if (size > 0)
		memcpy(pkt->data, data, size);
	pkt->pts = pts;
	pkt->dts = AV_NOPTS_VALUE;
	err = avcodec_send_packet(dec, pkt);
	av_packet_unref(pkt);
	return err;
}




static void quiet(void) { av_log_set_level(AV_LOG_QUIET); }
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// Error is an FFmpeg error code (a negative AVERROR).
type Error C.int

func (e Error) Error() string {
	var buf [C.AV_ERROR_MAX_STRING_SIZE]C.char
	C.av_strerror(C.int(e), &buf[0], C.size_t(len(buf)))
	return C.GoString(&buf[0])
}

var quietOnce sync.Once

// Quiet stops FFmpeg's own logging, process-wide. By default it prints to
// stderr, bypassing slog, once per damaged frame or slice. Routing it into
// slog would need a C callback formatting varargs for little gain: every
// failure also comes back as an error code, which the callers count and
// summarise with the error text.
func Quiet() { quietOnce.Do(func() { C.quiet() }) }

// Codec names a decoder.
type Codec int

// The decoders srtwhep opens.
const (
	AAC Codec = iota
	MP2
	MP3
	H264
	HEVC
)

func (c Codec) String() string {
	switch c {
	case AAC:
		return "AAC"
	case MP2:
		return "MP2"
	case MP3:
		return "MP3"
	case H264:
		return "H.264"
	case HEVC:
		return "H.265"
	}
	return fmt.Sprintf("codec %d", int(c))
}

func (c Codec) id() C.enum_AVCodecID {
	switch c {
	case AAC:
		return C.AV_CODEC_ID_AAC
	case MP2:
		return C.AV_CODEC_ID_MP2
	case MP3:
		return C.AV_CODEC_ID_MP3
	case H264:
		return C.AV_CODEC_ID_H264
	case HEVC:
		return C.AV_CODEC_ID_HEVC
	}
	return C.AV_CODEC_ID_NONE
}

// NoPTS is the PTS of a packet that has none.
const NoPTS = int64(C.AV_NOPTS_VALUE)

// Frame is a decoded frame (sound or picture), owned by the Decoder that
// returned it, or an Encoder's scaled copy.
type Frame C.AVFrame

func (f *Frame) c() *C.AVFrame { return (*C.AVFrame)(f) }

// Samples is a sound frame's sample count per channel.
func (f *Frame) Samples() int { return int(f.nb_samples) }

// Unref releases the frame's buffers early; the decoder reuses the frame.
func (f *Frame) Unref() { C.av_frame_unref(f.c()) }

// Size is a picture's width and height in pixels.
func (f *Frame) Size() (w, h int) { return int(f.width), int(f.height) }

// PTS is the picture's presentation time, the decoder's best guess first;
// false when it has none.
func (f *Frame) PTS() (int64, bool) {
	pts := f.best_effort_timestamp
	if pts == C.AV_NOPTS_VALUE {
		pts = f.pts
	}
	return int64(pts), pts != C.AV_NOPTS_VALUE
}

// DecoderConfig is what a decoder needs beyond its codec.
type DecoderConfig struct {
	SampleRate int    // sound: the rate the stream says, 0 when unknown
	Extradata  []byte // the codec's configuration (AAC's AudioSpecificConfig)
	// Clock90k sets the packet time base to the 90 kHz MPEG-TS clock, for
	// decoders whose frames' PTS are read back.
	Clock90k bool
	// MaxPixels refuses pictures larger than this area (width × height)
	// before their buffers are allocated: a decode error instead of
	// hundreds of megabytes for an 8K stream. 0: FFmpeg's own limit.
	MaxPixels int
}

// Decoder is one opened libavcodec decoder with its packet and frame.
type Decoder struct {
	ctx   *C.AVCodecContext
	pkt   *C.AVPacket
	frame *C.AVFrame
}

// OpenDecoder opens codec's decoder, single-threaded: frame threading
// would add a frame of delay per thread, and an FFmpeg thread pool per
// path is CPU the admission limit sees but nobody owns.
func OpenDecoder(codec Codec, cfg DecoderConfig) (*Decoder, error) {
	dc := C.avcodec_find_decoder(codec.id())
	if dc == nil {
		return nil, fmt.Errorf("FFmpeg has no %s decoder", codec)
	}
	d := &Decoder{ctx: C.avcodec_alloc_context3(dc), pkt: C.av_packet_alloc(), frame: C.av_frame_alloc()}
	if d.ctx == nil || d.pkt == nil || d.frame == nil {
		d.Free()
		return nil, errors.New("allocating the decoder failed")
	}
	d.ctx.thread_count = 1
	if cfg.SampleRate > 0 {
		d.ctx.sample_rate = C.int(cfg.SampleRate)
	}
	if cfg.MaxPixels > 0 {
		d.ctx.max_pixels = C.int64_t(cfg.MaxPixels)
	}
	if cfg.Clock90k {
		d.ctx.pkt_timebase = C.AVRational{num: 1, den: 90000}
	}
	if len(cfg.Extradata) > 0 {
		if rc := C.set_extradata(d.ctx, (*C.uint8_t)(unsafe.Pointer(&cfg.Extradata[0])), C.int(len(cfg.Extradata))); rc < 0 {
			d.Free()
			return nil, fmt.Errorf("decoder config: %w", Error(rc))
		}
	}
	if rc := C.avcodec_open2(d.ctx, dc, nil); rc < 0 {
		d.Free()
		return nil, fmt.Errorf("opening the %s decoder: %w", codec, Error(rc))
	}
	return d, nil
}

// Send feeds one coded frame or access unit with its PTS (NoPTS when it
// has none). The caller receives every frame it yields before sending
// again, so EAGAIN (decoder full) cannot happen.
func (d *Decoder) Send(data []byte, pts int64) error {
	var p *C.uint8_t
	if len(data) > 0 {
		p = (*C.uint8_t)(unsafe.Pointer(&data[0]))
	}
	if rc := C.send_packet(d.ctx, d.pkt, p, C.int(len(data)), C.int64_t(pts)); rc < 0 {
		return Error(rc)
	}
	return nil
}

// Receive returns the next decoded frame (pictures in presentation
// order), valid until the next Receive or Free, or nil once the decoder
// needs more input.
func (d *Decoder) Receive() (*Frame, error) {
	switch rc := C.avcodec_receive_frame(d.ctx, d.frame); {
	case drained(rc):
		return nil, nil
	case rc < 0:
		return nil, Error(rc)
	}
	return (*Frame)(d.frame), nil
}

// Free releases the decoder; safe on a half-opened one.
func (d *Decoder) Free() {
	C.avcodec_free_context(&d.ctx)
	C.av_packet_free(&d.pkt)
	C.av_frame_free(&d.frame)
}

// drained reports whether rc says a codec has nothing more to give until
// it is sent more (EAGAIN) or ever (EOF).
func drained(rc C.int) bool { return rc == C.errAgain || rc == C.errEOF }
