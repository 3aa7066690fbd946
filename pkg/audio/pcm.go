package audio

import (
	"cmp"
	"fmt"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/avcodec"
)

const (
	// frameSamples is one 20 ms Opus frame at 48 kHz: the size browsers
	// expect (ptime 20) and the best quality per overhead for music.
	frameSamples = 960
	channels     = 2
	frameFloats  = frameSamples * channels
)

// pcmSource decodes AAC or MPEG audio with libavcodec and turns it into
// what the Opus encoder takes: 48 kHz (libopus rejects 44.1 kHz),
// interleaved float, stereo, in frames of exactly 960 samples (the last
// one padded with silence when a run is drained). It owns C memory, freed
// by close.
type pcmSource struct {
	// onFrame receives each 960-sample stereo frame; the slice is only
	// valid during the call.
	onFrame func(pcm []float32) error
	// onSegment is called when a new resampler starts: the input timeline
	// restarts there, so the caller re-anchors its timestamps.
	onSegment func()

	dec *avcodec.Decoder
	res *avcodec.Resampler // nil between runs
	// pending holds resampled samples short of a whole frame.
	pending []float32
}

func newPCMSource(t av.AudioTrack, onFrame func([]float32) error, onSegment func()) (*pcmSource, error) {
	dec, err := openDecoder(t)
	if err != nil {
		return nil, err
	}
	return &pcmSource{onFrame: onFrame, onSegment: onSegment, dec: dec, pending: make([]float32, 0, 4*frameFloats)}, nil
}

// running reports whether a run is under way, and inRate its input rate.
func (p *pcmSource) running() bool { return p.res != nil }
func (p *pcmSource) inRate() int   { return p.res.InRate() }

// decode feeds one coded frame and calls onFrame for each 960-sample
// output frame it completes. It returns the number of input samples that
// entered the resampler (at inRate) and the first error.
//
// Samples count even when an output frame they complete is refused: they
// are on the run's timeline all the same, and leaving them out would put
// the next input frame off the expected PTS and restart the run on every
// frame from then on, each restart padding and refusing a frame again.
func (p *pcmSource) decode(data []byte) (samples int, err error) {
	if err := p.dec.Send(data, avcodec.NoPTS); err != nil {
		return 0, fmt.Errorf("decoding: %w", err)
	}
	for {
		f, ferr := p.dec.Receive()
		if ferr != nil {
			return samples, cmp.Or(err, fmt.Errorf("decoding: %w", ferr))
		}
		if f == nil {
			return samples, err
		}
		n := f.Samples()
		used, rerr := p.resample(f)
		f.Unref()
		if used {
			samples += n
		}
		err = cmp.Or(err, rerr)
	}
}

// resample pushes one decoded frame through the resampler, draining it
// and starting a new run first if the decoder's output format changed.
// used reports whether the frame's samples entered the run.
func (p *pcmSource) resample(f *avcodec.Frame) (used bool, err error) {
	if p.res == nil || !p.res.Accepts(f) {
		// A failed drain lost old-run frames only; this frame still
		// starts the new run.
		err = p.drain()
		res, oerr := avcodec.OpenResampler(f, av.OpusClockRate)
		if oerr != nil {
			return false, cmp.Or(err, oerr)
		}
		p.res = res
		p.onSegment()
	}
	var cerr error
	if p.pending, cerr = p.res.Convert(p.pending, f); cerr != nil {
		// The run's anchor now stands for samples that never went in;
		// ending it lets the next frame start a correct one.
		p.endRun()
		return false, cmp.Or(err, fmt.Errorf("resampling: %w", cerr))
	}
	return true, cmp.Or(err, p.emit())
}

// emit hands every whole frame in pending to onFrame. A frame onFrame
// refuses is still consumed, so the next one keeps its place in time; the
// first error is returned.
func (p *pcmSource) emit() error {
	var first error
	n := 0
	for ; len(p.pending)-n >= frameFloats; n += frameFloats {
		if err := p.onFrame(p.pending[n : n+frameFloats]); err != nil && first == nil {
			first = err
		}
	}
	p.pending = p.pending[:copy(p.pending, p.pending[n:])]
	return first
}

// drain flushes the samples the resampler still holds (the last frame
// padded with silence to 960), then frees it. Used when the input
// timeline or format breaks: the held samples belong to the old one.
func (p *pcmSource) drain() error {
	if p.res == nil {
		return nil
	}
	defer p.endRun()
	for {
		before := len(p.pending)
		var err error
		if p.pending, err = p.res.Convert(p.pending, nil); err != nil {
			return fmt.Errorf("resampling: %w", err)
		}
		if len(p.pending) == before {
			break
		}
	}
	if rest := len(p.pending) % frameFloats; rest != 0 {
		p.pending = append(p.pending, make([]float32, frameFloats-rest)...)
	}
	return p.emit()
}

func (p *pcmSource) endRun() {
	if p.res != nil {
		p.res.Free()
		p.res = nil
	}
	p.pending = p.pending[:0]
}

func (p *pcmSource) close() {
	p.endRun()
	if p.dec != nil {
		p.dec.Free()
		p.dec = nil
	}
}

// openDecoder opens the FFmpeg decoder of t's codec.
func openDecoder(t av.AudioTrack) (*avcodec.Decoder, error) {
	var c avcodec.Codec
	switch {
	case t.Codec == av.AudioCodecAAC:
		c = avcodec.AAC
	case t.Codec == av.AudioCodecMPEG1 && t.Layer == 2:
		c = avcodec.MP2
	case t.Codec == av.AudioCodecMPEG1 && t.Layer == 3:
		c = avcodec.MP3
	default:
		return nil, fmt.Errorf("cannot decode %s (layer %d)", t.Codec, t.Layer)
	}
	return avcodec.OpenDecoder(c, avcodec.DecoderConfig{SampleRate: t.SampleRate, Extradata: t.Config})
}
