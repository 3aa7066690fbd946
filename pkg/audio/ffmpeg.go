package audio

// The FFmpeg binding: only libavcodec (decoders), libswresample and
// libavutil. go-astiav linked libavformat, libavfilter and libavdevice as
// well, and Debian builds those against libsrt-gnutls, so the process held
// two libsrt copies beside srtgo's (openssl) one, with clashing symbols.
// None of the three libraries here depends on libsrt.
//
// The C helpers exist where Go cannot do the job itself: macros
// (AVERROR), compound literals (AV_CHANNEL_LAYOUT_STEREO), and arrays of
// pointers to Go memory, which cgo forbids handing to C.

/*
#cgo pkg-config: libavcodec libswresample libavutil
#include <errno.h>
#include <string.h>
#include <libavcodec/avcodec.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/mem.h>
#include <libswresample/swresample.h>

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
// keep a reference past the call, and the Go bytes may not be kept by C.
static int send_packet(AVCodecContext *dec, AVPacket *pkt, const uint8_t *data, int size) {
	int err = av_new_packet(pkt, size);
	if (err < 0)
		return err;
	if (size > 0)
		memcpy(pkt->data, data, size);
	err = avcodec_send_packet(dec, pkt);
	av_packet_unref(pkt);
	return err;
}

static int open_resampler(SwrContext **swr, AVFrame *in, int out_rate) {
	AVChannelLayout stereo = AV_CHANNEL_LAYOUT_STEREO;
	int err = swr_alloc_set_opts2(swr, &stereo, AV_SAMPLE_FMT_FLT, out_rate,
		&in->ch_layout, in->format, in->sample_rate, 0, NULL);
	if (err < 0)
		return err;
	// swr's default rematrix feeds a mono source's single (front centre)
	// channel to each side at -3 dB (fixed, not its center_mix_level), the
	// level a centre speaker gets in a surround downmix; a mono voice heard
	// on both sides must keep its own level, so mono maps at unity gain.
	// Surround keeps swr's defaults.
	if (in->ch_layout.nb_channels == 1) {
		static const double unity[2] = {1.0, 1.0}; // [out channel][in channel]
		err = swr_set_matrix(*swr, unity, 1);
		if (err < 0)
			return err;
	}
	return swr_init(*swr);
}

// A NULL frame flushes the samples swr still holds.
static int resample(SwrContext *swr, float *out, int out_count, const AVFrame *in) {
	uint8_t *planes[1] = {(uint8_t *)out};
	if (!in)
		return swr_convert(swr, planes, out_count, NULL, 0);
	return swr_convert(swr, planes, out_count, (const uint8_t **)in->extended_data, in->nb_samples);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// avError is an FFmpeg error code (a negative AVERROR).
type avError C.int

func (e avError) Error() string {
	var buf [C.AV_ERROR_MAX_STRING_SIZE]C.char
	C.av_strerror(C.int(e), &buf[0], C.size_t(len(buf)))
	return C.GoString(&buf[0])
}

// frame is a decoded frame owned by a decoder.
type frame C.AVFrame

func (f *frame) samples() int { return int(f.nb_samples) }

// unref releases the frame's buffers early; the decoder reuses the frame.
func (f *frame) unref() { C.av_frame_unref((*C.AVFrame)(f)) }

// decoder is one opened libavcodec audio decoder with its packet and frame.
type decoder struct {
	ctx   *C.AVCodecContext
	pkt   *C.AVPacket
	frame *C.AVFrame
}

func codecID(t av.AudioTrack) (C.enum_AVCodecID, error) {
	switch {
	case t.Codec == av.AudioCodecAAC:
		return C.AV_CODEC_ID_AAC, nil
	case t.Codec == av.AudioCodecMPEG1 && t.Layer == 2:
		return C.AV_CODEC_ID_MP2, nil
	case t.Codec == av.AudioCodecMPEG1 && t.Layer == 3:
		return C.AV_CODEC_ID_MP3, nil
	}
	return 0, fmt.Errorf("cannot decode %s (layer %d)", t.Codec, t.Layer)
}

func openDecoder(t av.AudioTrack) (*decoder, error) {
	id, err := codecID(t)
	if err != nil {
		return nil, err
	}
	codec := C.avcodec_find_decoder(id)
	if codec == nil {
		return nil, fmt.Errorf("FFmpeg has no %s decoder", t.Codec)
	}
	d := &decoder{ctx: C.avcodec_alloc_context3(codec), pkt: C.av_packet_alloc(), frame: C.av_frame_alloc()}
	if d.ctx == nil || d.pkt == nil || d.frame == nil {
		d.free()
		return nil, errors.New("allocating the decoder failed")
	}
	// Audio decoders do not thread, and a stray FFmpeg thread per path
	// would be nobody's to account for.
	d.ctx.thread_count = 1
	if t.SampleRate > 0 {
		d.ctx.sample_rate = C.int(t.SampleRate)
	}
	if len(t.Config) > 0 {
		if rc := C.set_extradata(d.ctx, (*C.uint8_t)(unsafe.Pointer(&t.Config[0])), C.int(len(t.Config))); rc < 0 {
			d.free()
			return nil, fmt.Errorf("decoder config: %w", avError(rc))
		}
	}
	if rc := C.avcodec_open2(d.ctx, codec, nil); rc < 0 {
		d.free()
		return nil, fmt.Errorf("opening the %s decoder: %w", t.Codec, avError(rc))
	}
	return d, nil
}

// send feeds one coded frame. The caller receives every frame it yields
// before sending again, so EAGAIN (decoder full) cannot happen.
func (d *decoder) send(data []byte) error {
	var p *C.uint8_t
	if len(data) > 0 {
		p = (*C.uint8_t)(unsafe.Pointer(&data[0]))
	}
	if rc := C.send_packet(d.ctx, d.pkt, p, C.int(len(data))); rc < 0 {
		return avError(rc)
	}
	return nil
}

// receive returns the next decoded frame, valid until the next receive or
// free, or nil once the decoder needs more input.
func (d *decoder) receive() (*frame, error) {
	switch rc := C.avcodec_receive_frame(d.ctx, d.frame); {
	case rc == C.errAgain || rc == C.errEOF:
		return nil, nil
	case rc < 0:
		return nil, avError(rc)
	}
	return (*frame)(d.frame), nil
}

func (d *decoder) free() {
	C.avcodec_free_context(&d.ctx)
	C.av_packet_free(&d.pkt)
	C.av_frame_free(&d.frame)
}

// resampler converts one input format (rate, sample format, channel
// layout) to interleaved float stereo at 48 kHz; a new input format needs
// a new resampler. swr's defaults (those of FFmpeg's aresample filter)
// suit: mono goes to both sides at -3 dB, and the first output sample is
// aligned with the first input sample (swr mirrors the start of the input
// to fill its filter), so output sample k is at k/48000 s into the run.
type resampler struct {
	swr    *C.SwrContext
	rate   C.int
	format C.int
	layout C.AVChannelLayout
}

func openResampler(f *frame) (*resampler, error) {
	in := (*C.AVFrame)(f)
	r := &resampler{rate: in.sample_rate, format: in.format}
	if rc := C.av_channel_layout_copy(&r.layout, &in.ch_layout); rc < 0 {
		return nil, fmt.Errorf("resampler: %w", avError(rc))
	}
	if rc := C.open_resampler(&r.swr, in, av.OpusClockRate); rc < 0 {
		r.free()
		return nil, fmt.Errorf("resampler (%d Hz, %s, %s): %w", in.sample_rate, sampleFormatName(in.format), layoutName(&in.ch_layout), avError(rc))
	}
	return r, nil
}

// accepts reports whether f has the format this resampler was made for.
func (r *resampler) accepts(f *frame) bool {
	return f.sample_rate == r.rate && f.format == r.format && C.av_channel_layout_compare(&r.layout, &f.ch_layout) == 0
}

// convert resamples in (nil flushes) and appends the output to out.
func (r *resampler) convert(out []float32, f *frame) ([]float32, error) {
	in := (*C.AVFrame)(f)
	var n C.int
	if in != nil {
		n = in.nb_samples
	}
	room := int(C.swr_get_out_samples(r.swr, n))
	if room < 0 {
		return out, avError(room)
	}
	have := len(out)
	// One spare sample keeps &buf[have] valid when room is 0.
	buf := slices.Grow(out, (room+1)*channels)[:have+(room+1)*channels]
	got := C.resample(r.swr, (*C.float)(unsafe.Pointer(&buf[have])), C.int(room), in)
	if got < 0 {
		return out, avError(got)
	}
	return buf[:have+int(got)*channels], nil
}

func (r *resampler) free() {
	C.swr_free(&r.swr)
	C.av_channel_layout_uninit(&r.layout)
}

func sampleFormatName(f C.int) string {
	if s := C.av_get_sample_fmt_name(C.enum_AVSampleFormat(f)); s != nil {
		return C.GoString(s)
	}
	return fmt.Sprintf("sample format %d", f)
}

func layoutName(l *C.AVChannelLayout) string {
	var buf [64]C.char
	if C.av_channel_layout_describe(l, &buf[0], C.size_t(len(buf))) < 0 {
		return fmt.Sprintf("%d channels", l.nb_channels)
	}
	return C.GoString(&buf[0])
}
