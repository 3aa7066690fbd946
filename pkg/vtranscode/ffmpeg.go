package vtranscode

// The FFmpeg binding: libavcodec (the h264/hevc decoders and the libx264
// encoder), libswscale and libavutil, as pkg/audio binds them and for the
// same reason: none of the three depends on libsrt, which libavformat
// would bring in a second time.
//
// The C helpers exist where cgo cannot do the job: macros (AVERROR),
// option strings set through av_opt, and the frame-plane arrays sws_scale
// takes.

/*
#cgo pkg-config: libavcodec libswscale libavutil
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <libavcodec/avcodec.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/log.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

enum {
	errAgain = AVERROR(EAGAIN),
	errEOF = AVERROR_EOF,
};

// The packet is a fresh padded copy: the decoder may keep a reference
// past the call, and C may not keep Go bytes.
static int send_packet(AVCodecContext *dec, AVPacket *pkt, const uint8_t *data, int size, int64_t pts) {
	int err = av_new_packet(pkt, size);
	if (err < 0)
		return err;
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

// avError is an FFmpeg error code (a negative AVERROR).
type avError C.int

func (e avError) Error() string {
	var buf [C.AV_ERROR_MAX_STRING_SIZE]C.char
	C.av_strerror(C.int(e), &buf[0], C.size_t(len(buf)))
	return C.GoString(&buf[0])
}

var quietOnce sync.Once

// silenceFFmpeg stops FFmpeg printing to stderr once per damaged slice;
// every failure also comes back as an error code, which is counted and
// summarised. pkg/audio sets the same process-wide level.
func silenceFFmpeg() { quietOnce.Do(func() { C.quiet() }) }

// cFrame is a decoded picture, owned by the decoder that returned it.
type cFrame = C.AVFrame

// decoder is one opened libavcodec video decoder with its packet and frame.
type decoder struct {
	ctx   *C.AVCodecContext
	pkt   *C.AVPacket
	frame *C.AVFrame
}

func openDecoder(c Codec) (*decoder, error) {
	id := C.enum_AVCodecID(C.AV_CODEC_ID_H264)
	if c == CodecH265 {
		id = C.AV_CODEC_ID_HEVC
	}
	codec := C.avcodec_find_decoder(id)
	if codec == nil {
		return nil, fmt.Errorf("FFmpeg has no %s decoder", c)
	}
	d := &decoder{ctx: C.avcodec_alloc_context3(codec), pkt: C.av_packet_alloc(), frame: C.av_frame_alloc()}
	if d.ctx == nil || d.pkt == nil || d.frame == nil {
		d.free()
		return nil, errors.New("allocating the decoder failed")
	}
	// One thread: frame threading would add a frame of delay per thread,
	// and an FFmpeg thread pool per path is CPU the admission limit sees
	// but nobody owns.
	d.ctx.thread_count = 1
	d.ctx.pkt_timebase = C.AVRational{num: 1, den: 90000}
	if rc := C.avcodec_open2(d.ctx, codec, nil); rc < 0 {
		d.free()
		return nil, fmt.Errorf("opening the %s decoder: %w", c, avError(rc))
	}
	return d, nil
}

// send feeds one access unit in Annex B. The caller receives every frame
// before sending again, so EAGAIN cannot happen.
func (d *decoder) send(annexB []byte, pts int64) error {
	if len(annexB) == 0 {
		return nil
	}
	if rc := C.send_packet(d.ctx, d.pkt, (*C.uint8_t)(unsafe.Pointer(&annexB[0])), C.int(len(annexB)), C.int64_t(pts)); rc < 0 {
		return avError(rc)
	}
	return nil
}

// receive returns the next picture in presentation order, valid until the
// next receive, or nil once the decoder needs more input.
func (d *decoder) receive() (*C.AVFrame, error) {
	switch rc := C.avcodec_receive_frame(d.ctx, d.frame); {
	case rc == C.errAgain || rc == C.errEOF:
		return nil, nil
	case rc < 0:
		return nil, avError(rc)
	}
	return d.frame, nil
}

func (d *decoder) free() {
	C.avcodec_free_context(&d.ctx)
	C.av_packet_free(&d.pkt)
	C.av_frame_free(&d.frame)
}

// encoderParams fix everything an encoder is opened with; a picture that
// does not match them needs a new encoder.
type encoderParams struct {
	width, height int
	fps           int // frames per second, rounded, at least 1
	bitrate       int // bit/s
	keyint        int // frames between IDRs
	preset        string
}

// encoder is one opened libx264 encoder and a scaler for pictures that are
// not 8-bit 4:2:0.
type encoder struct {
	p   encoderParams
	ctx *C.AVCodecContext
	pkt *C.AVPacket

	sws       *C.struct_SwsContext
	swsFormat C.int
	scaled    *C.AVFrame
}

func openEncoder(p encoderParams) (*encoder, error) {
	name := C.CString("libx264")
	defer C.free(unsafe.Pointer(name))
	codec := C.avcodec_find_encoder_by_name(name)
	if codec == nil {
		return nil, errors.New("FFmpeg was built without libx264; install Debian's libavcodec (it has it)")
	}
	e := &encoder{p: p, ctx: C.avcodec_alloc_context3(codec), pkt: C.av_packet_alloc()}
	if e.ctx == nil || e.pkt == nil {
		e.free()
		return nil, errors.New("allocating the encoder failed")
	}
	c := e.ctx
	c.width, c.height = C.int(p.width), C.int(p.height)
	c.pix_fmt = C.AV_PIX_FMT_YUV420P
	c.time_base = C.AVRational{num: 1, den: 90000}
	c.framerate = C.AVRational{num: C.int(p.fps), den: 1}
	c.bit_rate = C.int64_t(p.bitrate)
	// A VBV of one second at 1.5× the rate keeps bursts below what a
	// viewer's link was sized for, without starving IDRs.
	c.rc_max_rate = C.int64_t(p.bitrate * 3 / 2)
	c.rc_buffer_size = C.int(p.bitrate)
	c.gop_size = C.int(p.keyint)
	c.keyint_min = C.int(p.keyint)
	c.max_b_frames = 0
	c.thread_count = 1
	opts := [][2]string{
		{"preset", p.preset},
		{"tune", "zerolatency"},
		// baseline is Constrained Baseline in x264: what every browser's
		// decoder takes, and what the WHEP answer's 42e01f promises.
		{"profile", "baseline"},
		// scenecut=0 keeps IDRs exactly keyint apart, so the GOP cache
		// and a joining viewer's wait are what the config says.
		{"x264-params", "scenecut=0:repeat-headers=1:annexb=1"},
	}
	for _, o := range opts {
		k, v := C.CString(o[0]), C.CString(o[1])
		rc := C.set_opt(c, k, v)
		C.free(unsafe.Pointer(k))
		C.free(unsafe.Pointer(v))
		if rc < 0 {
			e.free()
			return nil, fmt.Errorf("libx264 option %s=%s: %w", o[0], o[1], avError(rc))
		}
	}
	if rc := C.avcodec_open2(c, codec, nil); rc < 0 {
		e.free()
		return nil, fmt.Errorf("opening libx264 (%dx%d): %w", p.width, p.height, avError(rc))
	}
	return e, nil
}

// prepare returns f as 8-bit 4:2:0 at the encoder's size, scaling into the
// encoder's own frame when it is not.
func (e *encoder) prepare(f *C.AVFrame) (*C.AVFrame, error) {
	if (f.format == C.AV_PIX_FMT_YUV420P || f.format == C.AV_PIX_FMT_YUVJ420P) &&
		int(f.width) == e.p.width && int(f.height) == e.p.height {
		return f, nil
	}
	if e.sws == nil || e.swsFormat != f.format {
		C.sws_freeContext(e.sws)
		e.sws = C.sws_getContext(f.width, f.height, C.enum_AVPixelFormat(f.format), C.int(e.p.width), C.int(e.p.height),
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
		e.scaled.width, e.scaled.height = C.int(e.p.width), C.int(e.p.height)
		if rc := C.av_frame_get_buffer(e.scaled, 0); rc < 0 {
			return nil, fmt.Errorf("frame buffer: %w", avError(rc))
		}
	}
	if rc := C.scale(e.sws, f, e.scaled); rc < 0 {
		return nil, fmt.Errorf("converting %s: %w", pixelFormatName(f.format), avError(rc))
	}
	return e.scaled, nil
}

// encode sends one picture; the encoder decides its type (an IDR every
// keyint pictures).
func (e *encoder) encode(f *C.AVFrame, pts int64) error {
	f.pts = C.int64_t(pts)
	// The decoder's picture type must not steer the encoder.
	f.pict_type = C.AV_PICTURE_TYPE_NONE
	if rc := C.avcodec_send_frame(e.ctx, f); rc < 0 {
		return avError(rc)
	}
	return nil
}

// receive returns the next coded picture in Annex B (valid until the next
// receive) with its PTS, or nil once the encoder needs more input.
func (e *encoder) receive() (data []byte, pts int64, key bool, err error) {
	switch rc := C.avcodec_receive_packet(e.ctx, e.pkt); {
	case rc == C.errAgain || rc == C.errEOF:
		return nil, 0, false, nil
	case rc < 0:
		return nil, 0, false, avError(rc)
	}
	data = unsafe.Slice((*byte)(unsafe.Pointer(e.pkt.data)), int(e.pkt.size))
	return data, int64(e.pkt.pts), C.pkt_key(e.pkt) != 0, nil
}

// unref releases the last received packet.
func (e *encoder) unref() { C.av_packet_unref(e.pkt) }

func (e *encoder) free() {
	C.avcodec_free_context(&e.ctx)
	C.av_packet_free(&e.pkt)
	C.sws_freeContext(e.sws)
	e.sws = nil
	C.av_frame_free(&e.scaled)
}

func frameSize(f *C.AVFrame) (w, h int, format C.int) { return int(f.width), int(f.height), f.format }

func framePTS(f *C.AVFrame) (int64, bool) {
	pts := f.best_effort_timestamp
	if pts == C.AV_NOPTS_VALUE {
		pts = f.pts
	}
	return int64(pts), pts != C.AV_NOPTS_VALUE
}

func pixelFormatName(f C.int) string {
	if s := C.av_get_pix_fmt_name(C.enum_AVPixelFormat(f)); s != nil {
		return C.GoString(s)
	}
	return fmt.Sprintf("pixel format %d", f)
}
