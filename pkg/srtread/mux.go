package srtread

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// PIDs of the program. The audio PID moves between two values when the
// audio codec changes, so a player sees a new stream rather than a
// stream whose codec changed under it, which few players handle.
const (
	videoPID  = 256
	audioPIDA = 257
	audioPIDB = 258
)

// A segment (the first one, or one after a publisher change) whose
// publisher announced audio waits for its first audio unit before it
// starts, because the program's tracks are fixed when it starts. The wait
// is bounded by audioWait of video PTS and maxPending frames: ffmpeg packs
// some 300 ms of audio in a PES, which can trail the picture it plays
// with; a publisher whose audio does not come in time gets a video-only
// program, and a new program once its audio comes.
const (
	audioWait  = av.ClockRate
	maxPending = 64
	// maxHeld bounds the audio units kept back while a new program waits
	// for its first picture (about 30 ms of them in practice).
	maxHeld = 32
)

type placed struct {
	f   hub.Frame
	pts int64
}

// startPTS is where a reader's timeline starts: at 1 s, so that the PCR,
// which runs 100 ms behind the video, never goes below zero, and so that a
// player never sees a timestamp near the 33-bit wrap at the start.
const startPTS = av.ClockRate

// muxer turns one reader's frames into MPEG-TS: H.264 or H.265 as it came, and the
// source audio as it came (AAC, MPEG audio, Opus). It runs on the
// reader's goroutine. Its writer has fixed tracks, so a change of audio
// codec starts a new program (a new writer, a new PMT version); the
// packetizer keeps the packets continuous across it.
type muxer struct {
	out *packetizer
	log *slog.Logger
	// announced reports whether the path's current publisher announced
	// audio (hub.Reader.SourceAudio).
	announced func() bool

	// tl places every generation from its first IDR (a segment), so each
	// starts with a picture a decoder can start at.
	tl  hub.Timeline
	gen uint32
	// track is the latest audio track of the current generation, from any
	// unit, placed or not: audio that arrives before a segment's IDR is not
	// sent but tells what the segment carries.
	track *av.AudioTrack

	w          *mpegts.Writer // nil until the first segment starts
	codec      av.Codec       // the current segment's video, as published
	video      *mpegts.Track
	videoCodec av.Codec       // what the program's video track was made for
	audio      *mpegts.Track  // nil: no audio in the program, or audioTrack was refused
	audioTrack *av.AudioTrack // what the program's audio was made for
	audioPID   uint16
	wroteVideo bool // the program's first picture is out: it leads (PCR, tables)
	held       []placed
	waiting    bool // a segment waits for its audio track in pending
	pending    []placed

	programs   int
	audioError bool // an audio write failed: audio is off until the next program
}

func newMuxer(out *packetizer, log *slog.Logger, announced func() bool) *muxer {
	return &muxer{out: out, log: log, announced: announced, tl: hub.NewSegmentTimeline(startPTS)}
}

// write muxes one frame; an error means the output failed. Opus frames
// are ignored (the reader takes the source audio).
func (m *muxer) write(f hub.Frame, now time.Time) error {
	if f.Audio != nil {
		return nil
	}
	if f.Gen != m.gen {
		if m.waiting {
			// The publisher left while its segment waited for audio:
			// what it held goes without.
			if err := m.release(nil); err != nil {
				return err
			}
		}
		m.gen, m.track = f.Gen, nil
	}
	if f.Source != nil {
		m.track = f.Source.Track
		if m.waiting {
			// Any unit tells the track, also one that plays before the
			// segment's picture and is not sent.
			if err := m.release(m.track); err != nil {
				return err
			}
		}
	}
	pts, first, ok := m.tl.Place(f, now)
	if !ok {
		return nil
	}
	p := placed{f, pts}
	if first && f.Video != nil {
		// A new publisher may send another codec than the last: its
		// segment gets a program whose video track says so.
		m.codec = f.Video.Codec
	}
	if first {
		if m.track == nil && m.announced() {
			m.waiting = true
			m.pending = append(m.pending[:0], p)
			return nil
		}
		if err := m.setProgram(m.track); err != nil {
			return err
		}
		return m.put(p)
	}
	if m.waiting {
		m.pending = append(m.pending, p)
		if len(m.pending) >= maxPending || pts-m.pending[0].pts >= audioWait {
			return m.release(nil)
		}
		return nil
	}
	return m.put(p)
}

// release starts the waiting segment with tr as its audio and sends what
// it held.
func (m *muxer) release(tr *av.AudioTrack) error {
	m.waiting = false
	if err := m.setProgram(tr); err != nil {
		return err
	}
	for _, q := range m.pending {
		if err := m.put(q); err != nil {
			return err
		}
	}
	clear(m.pending)
	m.pending = m.pending[:0]
	return nil
}

// put writes one placed frame into the current program.
func (m *muxer) put(p placed) error {
	if p.f.Video != nil {
		au := p.f.Video
		if !writable(au) {
			// mediacommon's writer indexes the first byte of every NAL
			// unit and panics on an empty one, which would take the
			// whole server down. tsdemux never emits one; this guard
			// is for any other source of access units.
			return nil
		}
		write, name := m.w.WriteH264, "H.264"
		if m.videoCodec == av.CodecH265 {
			write, name = m.w.WriteH265, "H.265"
		}
		if err := write(m.video, p.pts, p.pts, au.NALUs); err != nil {
			return m.outputErr(fmt.Errorf("%s: %w", name, err))
		}
		m.wroteVideo = true
		for _, q := range m.held {
			if err := m.writeAudio(q); err != nil {
				return err
			}
		}
		clear(m.held)
		m.held = m.held[:0]
		return nil
	}
	tr := p.f.Source.Track
	if tr != m.audioTrack {
		if err := m.setProgram(tr); err != nil {
			return err
		}
	}
	if !m.wroteVideo {
		// A new program's first packets are its picture's, so the video
		// track carries the PCR and the tables come with an IDR.
		if len(m.held) == maxHeld {
			m.held = append(m.held[:0], m.held[1:]...)
		}
		m.held = append(m.held, p)
		return nil
	}
	return m.writeAudio(p)
}

func (m *muxer) writeAudio(p placed) error {
	if m.audio == nil || m.audioError {
		return nil
	}
	u := p.f.Source
	if len(u.Data) == 0 {
		// No codec has an empty frame, and the ADTS header of an empty
		// AAC one is invalid: a reader (mediacommon's, at least) gives
		// up on the whole stream at it.
		return nil
	}
	var err error
	switch c := m.audio.Codec.(type) {
	case *mpegts.CodecMPEG4Audio:
		err = m.w.WriteMPEG4Audio(m.audio, p.pts, [][]byte{u.Data})
	case *mpegts.CodecMPEG1Audio:
		err = m.w.WriteMPEG1Audio(m.audio, p.pts, [][]byte{u.Data})
	case *mpegts.CodecOpus:
		err = m.w.WriteOpus(m.audio, p.pts, [][]byte{u.Data})
	default:
		err = fmt.Errorf("no writer for %T", c)
	}
	if err == nil {
		return nil
	}
	if m.out.err != nil {
		return m.out.err
	}
	// The unit, not the output, is what failed: the reader keeps its
	// picture, and the next program tries audio again.
	m.audioError = true
	m.log.Warn("audio cannot be muxed; the reader gets video only until the audio changes",
		"codec", u.Track.Codec.String(), "err", err)
	return nil
}

// setProgram makes tr the program's audio (nil: none). The same codec
// with new parameters keeps the program, since AAC and MPEG audio carry
// their parameters in every frame; anything else starts a new one.
func (m *muxer) setProgram(tr *av.AudioTrack) error {
	if m.w != nil && m.videoCodec == m.codec && sameProgram(tr, m.audioTrack) {
		if tr != m.audioTrack {
			m.retune(tr)
		}
		return nil
	}
	var vc mpegts.Codec = &mpegts.CodecH264{}
	if m.codec == av.CodecH265 {
		vc = &mpegts.CodecH265{} // stream type 0x24
	}
	video := &mpegts.Track{PID: videoPID, Codec: vc}
	tracks := []*mpegts.Track{video}
	var audio *mpegts.Track
	if tr != nil {
		codec, err := tsCodec(tr)
		if err != nil {
			m.log.Warn("audio track cannot be muxed; the reader gets video only", "codec", tr.Codec.String(), "err", err)
		} else {
			if m.audioTrack == nil || m.audioTrack.Codec != tr.Codec || m.audioPID == 0 {
				m.audioPID = nextAudioPID(m.audioPID)
			}
			audio = &mpegts.Track{PID: m.audioPID, Codec: codec}
			tracks = append(tracks, audio)
		}
	}
	w := &mpegts.Writer{W: m.out, Tracks: tracks}
	if err := w.Initialize(); err != nil {
		return fmt.Errorf("MPEG-TS writer: %w", err)
	}
	m.out.newProgram()
	if m.programs > 0 {
		m.log.Info("reader's program changes", "audio", codecName(tr))
	}
	m.programs++
	m.w, m.video, m.videoCodec, m.audio, m.audioTrack = w, video, m.codec, audio, tr
	m.wroteVideo, m.audioError = false, false
	clear(m.held)
	m.held = m.held[:0]
	return nil
}

// retune follows new parameters of the same codec.
func (m *muxer) retune(tr *av.AudioTrack) {
	m.audioTrack = tr
	if m.audio == nil {
		return
	}
	if c, ok := m.audio.Codec.(*mpegts.CodecMPEG4Audio); ok {
		var conf mpeg4audio.AudioSpecificConfig
		if err := conf.Unmarshal(tr.Config); err != nil {
			m.audioError = true
			m.log.Warn("new AAC parameters cannot be read; the reader gets video only", "err", err)
			return
		}
		c.Config = conf
	}
}

func (m *muxer) outputErr(err error) error {
	if m.out.err != nil {
		return m.out.err
	}
	return err
}

// sameProgram reports whether a and b fit the same program: the same
// codec, and for Opus the same channel count, which its PMT descriptor
// states.
func sameProgram(a, b *av.AudioTrack) bool {
	switch {
	case a == nil || b == nil:
		return a == b
	case a.Codec != b.Codec:
		return false
	case a.Codec == av.AudioCodecOpus:
		return a.Channels == b.Channels
	}
	return true
}

func tsCodec(tr *av.AudioTrack) (mpegts.Codec, error) {
	switch tr.Codec {
	case av.AudioCodecAAC:
		var conf mpeg4audio.AudioSpecificConfig
		if err := conf.Unmarshal(tr.Config); err != nil {
			return nil, fmt.Errorf("AAC config: %w", err)
		}
		return &mpegts.CodecMPEG4Audio{Config: conf}, nil
	case av.AudioCodecMPEG1:
		return &mpegts.CodecMPEG1Audio{}, nil
	case av.AudioCodecOpus:
		return &mpegts.CodecOpus{ChannelCount: tr.Channels}, nil
	}
	return nil, errors.New("unknown codec")
}

// writable reports whether au has NAL units and none of them is empty.
func writable(au *av.AccessUnit) bool {
	for _, n := range au.NALUs {
		if len(n) == 0 {
			return false
		}
	}
	return len(au.NALUs) > 0
}

func nextAudioPID(cur uint16) uint16 {
	if cur == audioPIDA {
		return audioPIDB
	}
	return audioPIDA
}

func codecName(tr *av.AudioTrack) string {
	if tr == nil {
		return "none"
	}
	return tr.Codec.String()
}
