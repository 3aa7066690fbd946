package tsdemux

import (
	"bytes"
	"fmt"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg1audio"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
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
	d.noteError(audioErrorsMsg, err)
}
