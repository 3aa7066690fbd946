package tsdemux

import (
	"errors"
	"fmt"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg1audio"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/opus"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// onADTS parses the ADTS frames of a PES one at a time, unlike
// mediacommon's ADTSPackets, so damage late in a PES (which typically
// holds half a dozen frames) spares the frames before it. Frames after a
// damaged header are dropped: how many were lost, and so their PTS, is
// unknowable.
func (d *Demuxer) onADTS(pts int64, pes []byte) error {
	var samples int64
	for len(pes) > 0 {
		n := adtsFrameLen(pes)
		if n == 0 || n > len(pes) {
			return fmt.Errorf("AAC ADTS: bad header or frame length %d with %d bytes left", n, len(pes))
		}
		var pkts mpeg4audio.ADTSPackets
		if err := pkts.Unmarshal(pes[:n]); err != nil || len(pkts) != 1 {
			return fmt.Errorf("AAC ADTS: %w", err)
		}
		p := pkts[0]
		asc := mpeg4audio.AudioSpecificConfig{Type: p.Type, SampleRate: p.SampleRate, ChannelCount: p.ChannelCount}
		if err := d.describeAAC(&asc); err != nil {
			return err
		}
		d.emitAudio(pts+ticksAt(samples, p.SampleRate), p.AU)
		samples += mpeg4audio.SamplesPerAccessUnit
		pes = pes[n:]
	}
	return nil
}

// adtsFrameLen reads frame_length (header included) from an ADTS header
// (ISO 14496-3 1.A.2.2), or 0 without a sync word.
func adtsFrameLen(b []byte) int {
	if len(b) < 7 || b[0] != 0xff || b[1]&0xf0 != 0xf0 {
		return 0
	}
	return int(b[3]&0x03)<<11 | int(b[4])<<3 | int(b[5])>>5
}

func (d *Demuxer) onLATM(pts int64, pes []byte) error {
	var s mpeg4audio.AudioSyncStream
	if err := s.Unmarshal(pes); err != nil {
		return fmt.Errorf("AAC LATM: %w", err)
	}
	var samples int64
	for _, raw := range s.AudioMuxElements {
		e := mpeg4audio.AudioMuxElement{MuxConfigPresent: true, StreamMuxConfig: d.audio.latm}
		if err := e.Unmarshal(raw); err != nil {
			if d.audio.latm == nil && e.UseSameStreamMux {
				continue // joined mid-stream: wait for the next StreamMuxConfig
			}
			return fmt.Errorf("AAC LATM: %w", err)
		}
		smc := e.StreamMuxConfig
		if len(smc.Programs) == 0 || len(smc.Programs[0].Layers) == 0 || smc.Programs[0].Layers[0].AudioSpecificConfig == nil {
			return errors.New("AAC LATM: StreamMuxConfig without an AudioSpecificConfig")
		}
		d.audio.latm = smc
		asc := smc.Programs[0].Layers[0].AudioSpecificConfig
		if err := d.describeAAC(asc); err != nil {
			return err
		}
		perAU := int64(mpeg4audio.SamplesPerAccessUnit)
		if asc.FrameLengthFlag {
			perAU = 960
		}
		// Only program 0, layer 0 is audio we can play; further programs
		// would be other languages.
		for _, sub := range e.Payloads {
			if len(sub) == 0 || len(sub[0]) == 0 {
				continue
			}
			d.emitAudio(pts+ticksAt(samples, asc.SampleRate), sub[0][0])
			samples += perAU
		}
	}
	return nil
}

func (d *Demuxer) describeAAC(asc *mpeg4audio.AudioSpecificConfig) error {
	if asc.SampleRate <= 0 {
		return fmt.Errorf("AAC: sample rate %d", asc.SampleRate)
	}
	if d.audio.haveTrk && d.audio.track.Codec == av.AudioCodecAAC && d.audio.track.SampleRate == asc.SampleRate && d.audio.track.Channels == asc.ChannelCount {
		return nil
	}
	conf, err := asc.Marshal()
	if err != nil {
		return fmt.Errorf("AAC config: %w", err)
	}
	d.describeAudio(av.AudioTrack{Codec: av.AudioCodecAAC, SampleRate: asc.SampleRate,
		Channels: asc.ChannelCount, Config: conf})
	return nil
}

func (d *Demuxer) onMPEG1Audio(pts int64, pes []byte) error {
	var samples int64
	for len(pes) > 0 {
		var h mpeg1audio.FrameHeader
		if err := h.Unmarshal(pes); err != nil {
			return fmt.Errorf("MPEG audio: %w", err)
		}
		if h.MPEG2 {
			// mediacommon's FrameLen is the MPEG-1 formula; MPEG-2 layer
			// III frames are half that long, so splitting would go wrong.
			return fmt.Errorf("MPEG audio: MPEG-2 frame at %d Hz in an MPEG-1 track", h.SampleRate)
		}
		n := h.FrameLen()
		if n <= 0 || n > len(pes) {
			return fmt.Errorf("MPEG audio: frame of %d bytes, %d left in PES", n, len(pes))
		}
		ch := 2
		if h.ChannelMode == mpeg1audio.ChannelModeMono {
			ch = 1
		}
		if !d.audio.haveTrk || d.audio.track.SampleRate != h.SampleRate || d.audio.track.Channels != ch ||
			d.audio.track.Layer != int(h.Layer) {
			d.describeAudio(av.AudioTrack{Codec: av.AudioCodecMPEG1, SampleRate: h.SampleRate, Channels: ch, Layer: int(h.Layer)})
		}
		d.emitAudio(pts+ticksAt(samples, h.SampleRate), pes[:n])
		samples += int64(h.SampleCount())
		pes = pes[n:]
	}
	return nil
}

// onOpus unpacks the opus_control_header framing of ETSI TS 102 366
// Annex A (what mediacommon parses internally, unexported there).
func (d *Demuxer) onOpus(pts int64, pes []byte, channels int) error {
	if !d.audio.haveTrk {
		d.describeAudio(av.AudioTrack{Codec: av.AudioCodecOpus, SampleRate: av.OpusClockRate, Channels: channels})
	}
	var samples int64
	for len(pes) > 0 {
		pkt, rest, err := opusAccessUnit(pes)
		if err != nil {
			return fmt.Errorf("Opus in MPEG-TS: %w", err)
		}
		dur := opus.PacketDuration2(pkt)
		if dur == 0 {
			return errors.New("Opus packet with an invalid TOC")
		}
		d.emitAudio(pts+ticksAt(samples, av.OpusClockRate), pkt)
		samples += dur
		pes = rest
	}
	return nil
}

// opusAccessUnit splits one control header and its packet off buf.
func opusAccessUnit(buf []byte) (pkt, rest []byte, err error) {
	if len(buf) < 2 || buf[0] != 0x7f || buf[1]&0xe0 != 0xe0 {
		return nil, nil, errors.New("bad control header prefix")
	}
	startTrim, endTrim, ext := buf[1]&0x10 != 0, buf[1]&0x08 != 0, buf[1]&0x04 != 0
	pos, size := 2, 0
	for {
		if pos >= len(buf) {
			return nil, nil, errors.New("truncated control header")
		}
		b := int(buf[pos])
		pos++
		size += b
		if b != 255 {
			break
		}
	}
	if startTrim {
		pos += 2
	}
	if endTrim {
		pos += 2
	}
	if ext {
		if pos >= len(buf) {
			return nil, nil, errors.New("truncated control extension")
		}
		pos += 1 + int(buf[pos])
	}
	if pos+size > len(buf) || size == 0 {
		return nil, nil, fmt.Errorf("packet of %d bytes, %d left", size, len(buf)-min(pos, len(buf)))
	}
	return buf[pos : pos+size], buf[pos+size:], nil
}
