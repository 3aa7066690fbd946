package tsdemux

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg1audio"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/opus"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// audioFix is the advice every refused audio track ends with.
const audioFix = "encode audio with -c:a aac or -c:a libopus (OBS: AAC)"

// audioState is the audio bookkeeping, owned by Run's goroutine.
type audioState struct {
	track   av.AudioTrack
	haveTrk bool

	latm *mpeg4audio.StreamMuxConfig // last LATM StreamMuxConfig seen

	// When audio arrives before any video, its first PTS (seedRaw)
	// becomes the clock origin of both tracks.
	seeded  bool
	seedRaw int64
	haveOut bool
	lastOut int64

	sniffed bool // the unreadable track was looked at once

	summary errorSummary
}

// audioCodecOf maps a track to the codec tsdemux reads, if any.
func audioCodecOf(c mpegts.Codec) av.AudioCodec {
	switch c.(type) {
	case *mpegts.CodecMPEG4Audio, *mpegts.CodecMPEG4AudioLATM:
		return av.AudioCodecAAC
	case *mpegts.CodecMPEG1Audio:
		return av.AudioCodecMPEG1
	case *mpegts.CodecOpus:
		return av.AudioCodecOpus
	}
	return av.AudioCodecUnknown
}

// pickAudio chooses the first readable audio track. With none, it warns
// about the first audio track it cannot read, or arranges to look at an
// unidentified track, which may be MPEG audio below 32 kHz (stream type
// 0x04, which mediacommon does not read). It returns the track it dealt
// with, which is then not listed again among the ignored ones.
func (d *Demuxer) pickAudio(tr *mpegts.Reader, tracks []*mpegts.Track) *mpegts.Track {
	var refused, unknown *mpegts.Track
	for _, t := range tracks {
		switch t.Codec.(type) {
		case *mpegts.CodecAC3:
			if refused == nil {
				refused = t
			}
			continue
		case *mpegts.CodecUnsupported:
			if unknown == nil {
				unknown = t
			}
			continue
		}
		if audioCodecOf(t.Codec) != av.AudioCodecUnknown {
			// mediacommon's typed audio callbacks report parse errors
			// through the reader-wide decode-error callback, which cannot
			// tell audio from video; the untyped callback hands over the
			// PES payload so audio errors are counted as audio.
			tr.OnDataMPEGxVideo(t, func(pts int64, pes []byte) error {
				d.onAudioPES(t.Codec, pts, pes)
				return nil
			})
			d.log.Info("audio track", "codec", codecName(t.Codec), "audio_pid", t.PID)
			if d.onAudioFound != nil {
				d.onAudioFound(audioCodecOf(t.Codec))
			}
			return t
		}
	}
	switch {
	case refused != nil:
		d.log.Warn("audio track not played: "+codecName(refused.Codec)+" is not supported; video continues without sound; "+audioFix,
			"codec", codecName(refused.Codec), "audio_pid", refused.PID)
		return refused
	case unknown != nil:
		tr.OnDataMPEGxVideo(unknown, func(_ int64, pes []byte) error {
			d.sniffUnknown(unknown.PID, pes)
			return nil
		})
		return unknown
	}
	return nil
}

// sniffUnknown looks at the first PES of an unidentified track once: an
// MPEG audio frame header there means MP2/MP3 below 32 kHz, which deserves
// a warning with the fix; anything else is data nobody asked for.
func (d *Demuxer) sniffUnknown(pid uint16, pes []byte) {
	if d.audio.sniffed {
		return
	}
	d.audio.sniffed = true
	var h mpeg1audio.FrameHeader
	if err := h.Unmarshal(pes); err != nil {
		d.log.Info("ignoring unidentified track", "pid", pid)
		return
	}
	d.log.Warn(fmt.Sprintf("audio track not played: MPEG audio layer %d at %d Hz cannot be read (below 32 kHz); "+
		"video continues without sound; resample with -ar 48000 or %s", h.Layer, h.SampleRate, audioFix),
		"codec", "MPEG-2 Audio", "audio_pid", pid, "sample_rate", h.SampleRate)
}

// onAudioPES splits one audio PES into coded frames and hands them on.
// Nothing here may end Run: a broken audio track costs only its sound.
func (d *Demuxer) onAudioPES(codec mpegts.Codec, rawPTS int64, pes []byte) {
	d.maybeSummarise()
	pts, ok := d.audioPTS(rawPTS)
	if !ok {
		return
	}
	var err error
	switch c := codec.(type) {
	case *mpegts.CodecMPEG4Audio:
		err = d.onADTS(pts, pes)
	case *mpegts.CodecMPEG4AudioLATM:
		err = d.onLATM(pts, pes)
	case *mpegts.CodecMPEG1Audio:
		err = d.onMPEG1Audio(pts, pes)
	case *mpegts.CodecOpus:
		err = d.onOpus(pts, pes, c.ChannelCount)
	}
	if err != nil {
		d.audioError(err)
	}
}

// audioPTS places an audio PTS on the video's output clock. It maps the
// 33-bit distance to the latest video PTS rather than unwrapping audio on
// its own: that is exact within a timeline, and when the two tracks sit on
// opposite sides of a PTS jump (or the audio PTS is corrupt) the distance
// is implausible and the audio is dropped until video has re-based, so
// audio can never move the video's timeline.
func (d *Demuxer) audioPTS(raw int64) (int64, bool) {
	v, a := &d.video, &d.audio
	refRaw, refOut := v.lastRaw, v.lastOut
	if !v.havePTS {
		if !a.seeded {
			// The first video PTS will be unwrapped relative to this one.
			a.seeded, a.seedRaw = true, raw
			v.ptsDec.Decode(raw)
		}
		refRaw, refOut = a.seedRaw, 0
	}
	diff := signed33(raw - refRaw)
	if diff > maxPTSStep || diff < -maxPTSStep {
		d.audioError(fmt.Errorf("audio PTS %+.3f s away from video; audio dropped until the tracks agree",
			float64(diff)/av.ClockRate))
		return 0, false
	}
	out := refOut + diff
	if a.haveOut && out < a.lastOut {
		d.audioError(fmt.Errorf("audio PTS went back by %.3f s", float64(a.lastOut-out)/av.ClockRate))
		return 0, false
	}
	a.haveOut, a.lastOut = true, out
	return out, true
}

// signed33 interprets a difference of 33-bit timestamps as the shorter way
// round the wrap.
func signed33(d int64) int64 {
	d &= 1<<33 - 1
	if d >= 1<<32 {
		d -= 1 << 33
	}
	return d
}

// ticksAt returns the 90 kHz offset of sample n at rate: computed from the
// total each time so a run of frames never accumulates rounding.
func ticksAt(n int64, rate int) int64 { return n * av.ClockRate / int64(rate) }

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

func (d *Demuxer) describeAudio(t av.AudioTrack) {
	a := &d.audio
	if a.haveTrk && a.track.Codec == t.Codec && a.track.SampleRate == t.SampleRate &&
		a.track.Channels == t.Channels && a.track.Layer == t.Layer && bytes.Equal(a.track.Config, t.Config) {
		return
	}
	a.track, a.haveTrk = t, true
	d.log.Info("audio stream info", "codec", t.Codec.String(), "sample_rate", t.SampleRate,
		"channels", t.Channels)
	if d.onAudioTrack != nil {
		d.onAudioTrack(t)
	}
}

func (d *Demuxer) emitAudio(pts int64, data []byte) {
	if len(data) == 0 {
		return
	}
	// A frame is stamped from its PES's PTS plus the samples before it at
	// its own header's rate: a damaged header that changes the rate inside
	// a PES can move it back. Consumers rely on PTS never going back.
	if pts < d.audio.lastOut {
		d.audioError(fmt.Errorf("audio frame PTS went back by %.3f s inside a PES (its sample rate changed?)",
			float64(d.audio.lastOut-pts)/av.ClockRate))
		return
	}
	// Later frames of a PES are stamped past the PES's own PTS, so
	// audioPTS must compare the next PES with the last frame sent, not
	// with the last PES: one starting between the two would go back.
	d.audio.lastOut = pts
	d.audioUnits.Add(1)
	d.onAudio(av.AudioUnit{PTS: pts, Data: data})
}

// audioError counts an audio problem; it never touches video state.
func (d *Demuxer) audioError(err error) {
	d.audioErrors.Add(1)
	d.audio.summary.add(err)
	d.maybeSummarise()
}
