package avcodec

// The libx264 encoder, with the libswscale conversion for pictures it
// cannot take as they are.

/*
#cgo pkg-config: libavcodec libswscale libavutil
#include <stdlib.h>
#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

static int set_opt(AVCodecContext *ctx, const char *key, const char *val) {
	return av_opt_set(ctx->priv_data, key, val, 0);
}

static int scale(struct SwsContext *sws, const AVFrame *in, AVFrame *out) {
	return sws_scale(sws, (const uint8_t * const *)in->data, in->linesize, 0, in->height, out->data, out->linesize);
}

static int pkt_key(const AVPacket *pkt) { return (pkt->flags & AV_PKT_FLAG_KEY) != 0; }
*/
import "C"
import (
	"errors"
	"fmt"
	"unsafe"
)

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
	case drained(rc):
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
