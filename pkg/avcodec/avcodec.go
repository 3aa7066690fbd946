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
#cgo pkg-config: libavcodec libswscale libswresample libavutil
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <libavcodec/avcodec.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/log.h>
#include <libavutil/mem.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

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

static int set_opt(AVCodecContext *ctx, const char *key, const char *val) {
	return av_opt_set(ctx->priv_data, key, val, 0);
}

static int scale(struct SwsContext *sws, const AVFrame *in, AVFrame *out) {
	return sws_scale(sws, (const uint8_t * const *)in->data, in->linesize, 0, in->height, out->data, out->linesize);
}

static int pkt_key(const AVPacket *pkt) { return (pkt->flags & AV_PKT_FLAG_KEY) != 0; }

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
	case rc == C.errAgain || rc == C.errEOF:
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

// EncoderParams fix everything an encoder is opened with; a picture that
// does not match them needs a new encoder.
type EncoderParams struct {
	Width, Height int
	FPS           int // frames per second, rounded, at least 1
	Bitrate       int // bit/s
	Keyint        int // frames between IDRs
	Preset        string
}

// Encoder is one opened libx264 encoder and a scaler for pictures that
// are not 8-bit 4:2:0 at its size.
type Encoder struct {
	p   EncoderParams
	ctx *C.AVCodecContext
	pkt *C.AVPacket

	sws       *C.struct_SwsContext
	swsFormat C.int
	scaled    *C.AVFrame
}

// OpenEncoder opens libx264 for browsers: Constrained Baseline, no
// B-frames, an IDR exactly every Keyint pictures, Annex B with the
// parameter sets on every IDR.
func OpenEncoder(p EncoderParams) (*Encoder, error) {
	name := C.CString("libx264")
	defer C.free(unsafe.Pointer(name))
	codec := C.avcodec_find_encoder_by_name(name)
	if codec == nil {
		return nil, errors.New("FFmpeg was built without libx264; install Debian's libavcodec (it has it)")
	}
	e := &Encoder{p: p, ctx: C.avcodec_alloc_context3(codec), pkt: C.av_packet_alloc()}
	if e.ctx == nil || e.pkt == nil {
		e.Free()
		return nil, errors.New("allocating the encoder failed")
	}
	c := e.ctx
	c.width, c.height = C.int(p.Width), C.int(p.Height)
	c.pix_fmt = C.AV_PIX_FMT_YUV420P
	c.time_base = C.AVRational{num: 1, den: 90000}
	c.framerate = C.AVRational{num: C.int(p.FPS), den: 1}
	c.bit_rate = C.int64_t(p.Bitrate)
	// A VBV of one second at 1.5× the rate keeps bursts below what a
	// viewer's link was sized for, without starving IDRs.
	c.rc_max_rate = C.int64_t(p.Bitrate * 3 / 2)
	c.rc_buffer_size = C.int(p.Bitrate)
	c.gop_size = C.int(p.Keyint)
	c.keyint_min = C.int(p.Keyint)
	c.max_b_frames = 0
	c.thread_count = 1
	opts := [][2]string{
		{"preset", p.Preset},
		{"tune", "zerolatency"},
		// baseline is Constrained Baseline in x264: what every browser's
		// decoder takes, and what the WHEP answer's 42e01f promises.
		{"profile", "baseline"},
		// scenecut=0 keeps IDRs exactly keyint apart, so the GOP cache
		// and a joining viewer's wait are what the config says.
		{"x264-params", "scenecut=0:repeat-headers=1:annexb=1"},
		// A picture EncodeIDR forces is an IDR, not an open-GOP I picture:
		// a rendition's viewer switches onto it.
		{"forced-idr", "1"},
	}
	for _, o := range opts {
		k, v := C.CString(o[0]), C.CString(o[1])
		rc := C.set_opt(c, k, v)
		C.free(unsafe.Pointer(k))
		C.free(unsafe.Pointer(v))
		if rc < 0 {
			e.Free()
			return nil, fmt.Errorf("libx264 option %s=%s: %w", o[0], o[1], Error(rc))
		}
	}
	if rc := C.avcodec_open2(c, codec, nil); rc < 0 {
		e.Free()
		return nil, fmt.Errorf("opening libx264 (%dx%d): %w", p.Width, p.Height, Error(rc))
	}
	return e, nil
}

// Params are what the encoder was opened with.
func (e *Encoder) Params() EncoderParams { return e.p }

// Prepare returns f as 8-bit 4:2:0 at the encoder's size, scaling into
// the encoder's own frame when it is not.
func (e *Encoder) Prepare(pic *Frame) (*Frame, error) {
	f := pic.c()
	if (f.format == C.AV_PIX_FMT_YUV420P || f.format == C.AV_PIX_FMT_YUVJ420P) &&
		int(f.width) == e.p.Width && int(f.height) == e.p.Height {
		return pic, nil
	}
	if e.sws == nil || e.swsFormat != f.format {
		C.sws_freeContext(e.sws)
		e.sws = C.sws_getContext(f.width, f.height, C.enum_AVPixelFormat(f.format), C.int(e.p.Width), C.int(e.p.Height),
			C.AV_PIX_FMT_YUV420P, C.SWS_BILINEAR, nil, nil, nil)
		if e.sws == nil {
			return nil, fmt.Errorf("no conversion from %s to yuv420p", pixelFormatName(f.format))
		}
		e.swsFormat = f.format
	}
	if e.scaled == nil {
		e.scaled = C.av_frame_alloc()
		if e.scaled == nil {
			return nil, errors.New("allocating a frame failed")
		}
		e.scaled.format = C.AV_PIX_FMT_YUV420P
		e.scaled.width, e.scaled.height = C.int(e.p.Width), C.int(e.p.Height)
		if rc := C.av_frame_get_buffer(e.scaled, 0); rc < 0 {
			return nil, fmt.Errorf("frame buffer: %w", Error(rc))
		}
	}
	if rc := C.scale(e.sws, f, e.scaled); rc < 0 {
		return nil, fmt.Errorf("converting %s: %w", pixelFormatName(f.format), Error(rc))
	}
	return (*Frame)(e.scaled), nil
}

// Encode sends one picture; the encoder decides its type (an IDR every
// Keyint pictures).
func (e *Encoder) Encode(pic *Frame, pts int64) error {
	return e.EncodeIDR(pic, pts, false)
}

// EncodeIDR is Encode that, with idr, makes the picture an IDR (and
// counts the next Keyint from it): a rendition puts its IDRs where its
// source has them, so a viewer moves between the two at the same picture.
func (e *Encoder) EncodeIDR(pic *Frame, pts int64, idr bool) error {
	f := pic.c()
	f.pts = C.int64_t(pts)
	// The decoder's picture type must not steer the encoder.
	f.pict_type = C.AV_PICTURE_TYPE_NONE
	if idr {
		f.pict_type = C.AV_PICTURE_TYPE_I
	}
	if rc := C.avcodec_send_frame(e.ctx, f); rc < 0 {
		return Error(rc)
	}
	return nil
}

// Receive returns the next coded picture in Annex B (valid until Unref or
// the next Receive) with its PTS, or nil once the encoder needs more
// input.
func (e *Encoder) Receive() (data []byte, pts int64, key bool, err error) {
	switch rc := C.avcodec_receive_packet(e.ctx, e.pkt); {
	case rc == C.errAgain || rc == C.errEOF:
		return nil, 0, false, nil
	case rc < 0:
		return nil, 0, false, Error(rc)
	}
	data = unsafe.Slice((*byte)(unsafe.Pointer(e.pkt.data)), int(e.pkt.size))
	return data, int64(e.pkt.pts), C.pkt_key(e.pkt) != 0, nil
}

// Unref releases the last received packet.
func (e *Encoder) Unref() { C.av_packet_unref(e.pkt) }

// Free releases the encoder and its scaler; safe on a half-opened one.
func (e *Encoder) Free() {
	C.avcodec_free_context(&e.ctx)
	C.av_packet_free(&e.pkt)
	C.sws_freeContext(e.sws)
	e.sws = nil
	C.av_frame_free(&e.scaled)
}

func pixelFormatName(f C.int) string {
	if s := C.av_get_pix_fmt_name(C.enum_AVPixelFormat(f)); s != nil {
		return C.GoString(s)
	}
	return fmt.Sprintf("pixel format %d", f)
}
