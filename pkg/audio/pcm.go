package audio

import (
	"errors"
	"fmt"

	"github.com/asticode/go-astiav"

	"github.com/srtwhep/srtwhep/pkg/av"
)

const (
	// frameSamples is one 20 ms Opus frame at 48 kHz: the size browsers
	// expect (ptime 20) and the best quality per overhead for music.
	frameSamples = 960
	channels     = 2

	// packetPadding is AV_INPUT_BUFFER_PADDING_SIZE: FFmpeg's bitstream
	// readers may read this far past a packet, so the bytes must exist.
	packetPadding = 64
)

// chain turns any decoded layout, rate and sample format into what the
// Opus encoder takes: 48 kHz (libopus rejects 44.1 kHz), interleaved
// float, stereo (mono is copied to both sides), in frames of exactly 960
// samples (the last one padded with silence when the graph is drained).
var chain = fmt.Sprintf("aresample=%d,aformat=sample_fmts=flt:channel_layouts=stereo,asetnsamples=n=%d:p=1",
	av.OpusClockRate, frameSamples)

var zeroPadding [packetPadding]byte

// pcmSource decodes AAC or MPEG audio with FFmpeg and resamples it through
// a filter graph; it owns C memory, freed by close.
type pcmSource struct {
	// onFrame receives each 960-sample stereo frame; the slice is only
	// valid during the call.
	onFrame func(pcm []float32) error
	// onSegment is called when a new graph starts: the input timeline
	// restarts there, so the caller re-anchors its timestamps.
	onSegment func()

	dec     *astiav.CodecContext
	pkt     *astiav.Packet
	decoded *astiav.Frame
	out     *astiav.Frame
	scratch []byte

	graph   *astiav.FilterGraph
	src     *astiav.FilterContext
	sink    *astiav.FilterContext
	inRate  int
	inFmt   astiav.SampleFormat
	inChans string
	inPTS   int64 // samples pushed into the graph, in 1/inRate
}

func newPCMSource(t av.AudioTrack, onFrame func([]float32) error, onSegment func()) (*pcmSource, error) {
	var id astiav.CodecID
	switch {
	case t.Codec == av.AudioCodecAAC:
		id = astiav.CodecIDAac
	case t.Codec == av.AudioCodecMPEG1 && t.Layer == 2:
		id = astiav.CodecIDMp2
	case t.Codec == av.AudioCodecMPEG1 && t.Layer == 3:
		id = astiav.CodecIDMp3
	default:
		return nil, fmt.Errorf("cannot decode %s (layer %d)", t.Codec, t.Layer)
	}
	codec := astiav.FindDecoder(id)
	if codec == nil {
		return nil, fmt.Errorf("FFmpeg has no %s decoder", t.Codec)
	}
	p := &pcmSource{onFrame: onFrame, onSegment: onSegment, dec: astiav.AllocCodecContext(codec)}
	if p.dec == nil {
		return nil, errors.New("allocating the decoder failed")
	}
	// Audio decoders do not thread, and a stray FFmpeg thread per path
	// would be nobody's to account for.
	p.dec.SetThreadCount(1)
	if t.SampleRate > 0 {
		p.dec.SetSampleRate(t.SampleRate)
	}
	if len(t.Config) > 0 {
		if err := p.dec.SetExtraData(t.Config); err != nil {
			p.close()
			return nil, fmt.Errorf("decoder config: %w", err)
		}
	}
	if err := p.dec.Open(codec, nil); err != nil {
		p.close()
		return nil, fmt.Errorf("opening the %s decoder: %w", t.Codec, err)
	}
	p.pkt, p.decoded, p.out = astiav.AllocPacket(), astiav.AllocFrame(), astiav.AllocFrame()
	return p, nil
}

// decode feeds one coded frame and calls onFrame for each 960-sample
// output frame it completes. It returns the number of input samples
// decoded (at inRate) and the first error; a failed frame is skipped.
func (p *pcmSource) decode(data []byte) (samples int, err error) {
	// FromData copies; the padding must be zeros and part of the copy
	// because av_packet_from_data assumes it is there.
	p.scratch = append(append(p.scratch[:0], data...), zeroPadding[:]...)
	if err := p.pkt.FromData(p.scratch); err != nil {
		return 0, fmt.Errorf("packet: %w", err)
	}
	p.pkt.SetSize(len(data))
	err = p.dec.SendPacket(p.pkt)
	p.pkt.Unref()
	if err != nil && !errors.Is(err, astiav.ErrEagain) {
		return 0, fmt.Errorf("decoding: %w", err)
	}
	for {
		if err := p.dec.ReceiveFrame(p.decoded); err != nil {
			if errors.Is(err, astiav.ErrEagain) || errors.Is(err, astiav.ErrEof) {
				return samples, nil
			}
			return samples, fmt.Errorf("decoding: %w", err)
		}
		n := p.decoded.NbSamples()
		if err := p.filter(p.decoded); err != nil {
			p.decoded.Unref()
			return samples, err
		}
		samples += n
	}
}

// filter pushes one decoded frame (consumed) through the graph, rebuilding
// the graph first if the decoder's output format changed.
func (p *pcmSource) filter(f *astiav.Frame) error {
	chans := f.ChannelLayout().String()
	if p.graph == nil || f.SampleRate() != p.inRate || f.SampleFormat() != p.inFmt || chans != p.inChans {
		if err := p.drain(); err != nil {
			return err
		}
		if err := p.build(f.SampleRate(), f.SampleFormat(), chans); err != nil {
			return err
		}
		p.onSegment()
	}
	f.SetPts(p.inPTS)
	p.inPTS += int64(f.NbSamples())
	if err := p.src.BuffersrcAddFrame(f, astiav.NewBuffersrcFlags()); err != nil {
		return fmt.Errorf("resampling: %w", err)
	}
	return p.pull()
}

func (p *pcmSource) build(rate int, format astiav.SampleFormat, chans string) error {
	g := astiav.AllocFilterGraph()
	if g == nil {
		return errors.New("allocating the filter graph failed")
	}
	g.SetThreadCount(1)
	p.graph, p.inRate, p.inFmt, p.inChans, p.inPTS = g, rate, format, chans, 0
	abuffer, abuffersink := astiav.FindFilterByName("abuffer"), astiav.FindFilterByName("abuffersink")
	if abuffer == nil || abuffersink == nil {
		p.freeGraph()
		return errors.New("this FFmpeg lacks the abuffer/abuffersink filters (libavfilter)")
	}
	var err error
	p.src, err = g.NewFilterContext(abuffer, "in", astiav.FilterArgs{
		"time_base":      fmt.Sprintf("1/%d", rate),
		"sample_rate":    fmt.Sprint(rate),
		"sample_fmt":     format.Name(),
		"channel_layout": chans,
	})
	if err != nil {
		p.freeGraph()
		return fmt.Errorf("resampler input (%d Hz %s %s): %w", rate, format.Name(), chans, err)
	}
	if p.sink, err = g.NewFilterContext(abuffersink, "out", nil); err != nil {
		p.freeGraph()
		return fmt.Errorf("resampler output: %w", err)
	}
	outputs, inputs := astiav.AllocFilterInOut(), astiav.AllocFilterInOut()
	defer outputs.Free()
	defer inputs.Free()
	outputs.SetName("in")
	outputs.SetFilterContext(p.src)
	outputs.SetPadIdx(0)
	inputs.SetName("out")
	inputs.SetFilterContext(p.sink)
	inputs.SetPadIdx(0)
	if err := g.Parse(chain, inputs, outputs); err != nil {
		p.freeGraph()
		return fmt.Errorf("resampler graph: %w", err)
	}
	if err := g.Configure(); err != nil {
		p.freeGraph()
		return fmt.Errorf("resampler graph (%d Hz %s %s): %w", rate, format.Name(), chans, err)
	}
	return nil
}

// pull hands every complete output frame to onFrame.
func (p *pcmSource) pull() error {
	for {
		if err := p.sink.BuffersinkGetFrame(p.out, astiav.NewBuffersinkFlags()); err != nil {
			if errors.Is(err, astiav.ErrEagain) || errors.Is(err, astiav.ErrEof) {
				return nil
			}
			return fmt.Errorf("resampling: %w", err)
		}
		err := p.onFrame(interleavedFloats(p.out))
		p.out.Unref()
		if err != nil {
			return err
		}
	}
}

// drain ends the graph's input so the samples it still holds come out
// (the last frame padded to 960), then frees it. Used when the input
// timeline or format breaks: the held samples belong to the old one.
func (p *pcmSource) drain() error {
	if p.graph == nil {
		return nil
	}
	defer p.freeGraph()
	if err := p.src.BuffersrcAddFrame(nil, astiav.NewBuffersrcFlags()); err != nil {
		return fmt.Errorf("resampling: %w", err)
	}
	return p.pull()
}

func (p *pcmSource) freeGraph() {
	if p.graph != nil {
		p.graph.Free() // frees the filter contexts too
	}
	p.graph, p.src, p.sink = nil, nil, nil
}

func (p *pcmSource) close() {
	p.freeGraph()
	if p.dec != nil {
		p.dec.Free()
	}
	if p.pkt != nil {
		p.pkt.Free()
	}
	if p.decoded != nil {
		p.decoded.Free()
	}
	if p.out != nil {
		p.out.Free()
	}
	*p = pcmSource{}
}
