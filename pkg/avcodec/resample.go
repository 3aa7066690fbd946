package avcodec

/*
#cgo pkg-config: libswresample libavutil
#include <libavutil/channel_layout.h>
#include <libavutil/frame.h>
#include <libswresample/swresample.h>

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
	"fmt"
	"slices"
	"unsafe"
)

// StereoChannels is the Resampler's output: interleaved float stereo.
const StereoChannels = 2

// Resampler converts one input format (rate, sample format, channel
// layout) to interleaved float stereo at one output rate; a new input
// format needs a new Resampler. swr's defaults (those of FFmpeg's
// aresample filter) suit, but for mono (see open_resampler), and the
// first output sample is aligned with the first input sample (swr
// mirrors the start of the input to fill its filter), so output sample k
// is at k/rate s into the run.
type Resampler struct {
	swr    *C.SwrContext
	rate   C.int
	format C.int
	layout C.AVChannelLayout
}

// OpenResampler makes a Resampler for f's format, to outRate.
func OpenResampler(f *Frame, outRate int) (*Resampler, error) {
	in := f.c()
	r := &Resampler{rate: in.sample_rate, format: in.format}
	if rc := C.av_channel_layout_copy(&r.layout, &in.ch_layout); rc < 0 {
		return nil, fmt.Errorf("resampler: %w", Error(rc))
	}
	if rc := C.open_resampler(&r.swr, in, C.int(outRate)); rc < 0 {
		r.Free()
		return nil, fmt.Errorf("resampler (%d Hz, %s, %s): %w", in.sample_rate, sampleFormatName(in.format), layoutName(&in.ch_layout), Error(rc))
	}
	return r, nil
}

// InRate is the sample rate of the input it was made for.
func (r *Resampler) InRate() int { return int(r.rate) }

// Accepts reports whether f has the format this resampler was made for.
func (r *Resampler) Accepts(f *Frame) bool {
	return f.sample_rate == r.rate && f.format == r.format && C.av_channel_layout_compare(&r.layout, &f.ch_layout) == 0
}

// Convert resamples f (nil flushes) and appends the output to out.
func (r *Resampler) Convert(out []float32, f *Frame) ([]float32, error) {
	var in *C.AVFrame
	var n C.int
	if f != nil {
		in = f.c()
		n = in.nb_samples
	}
	room := int(C.swr_get_out_samples(r.swr, n))
	if room < 0 {
		return out, Error(room)
	}
	have := len(out)
	// One spare sample keeps &buf[have] valid when room is 0.
	buf := slices.Grow(out, (room+1)*StereoChannels)[:have+(room+1)*StereoChannels]
	got := C.resample(r.swr, (*C.float)(unsafe.Pointer(&buf[have])), C.int(room), in)
	if got < 0 {
		return out, Error(got)
	}
	return buf[:have+int(got)*StereoChannels], nil
}

// Free releases the resampler.
func (r *Resampler) Free() {
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
