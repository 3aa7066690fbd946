// Package audio turns a publisher's audio track into Opus for WebRTC, once
// per path: AAC (from ADTS or LATM) and MPEG-1 audio layer II/III are
// decoded in process with FFmpeg's libavcodec, resampled to 48 kHz stereo
// with libswresample, and encoded with libopus in 20 ms frames; Opus
// passes through untouched.
//
// Timestamps stay on the demuxer's 90 kHz clock, the clock of the video,
// so lip sync survives transcoding: each output frame's PTS is the PTS of
// the input frame that started the current run of audio plus the samples
// produced since, so it neither drifts nor inherits the input's rounding.
// A run ends when the input PTS disagrees with the samples decoded by more
// than maxSkew (a lost or damaged frame) or when the decoded format
// changes; the samples still buffered are flushed and stamped on the old
// run, and the next frame starts a new one.
//
// Damaged input is counted and skipped; nothing here ends a stream.
package audio

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/opus"
	hopus "gopkg.in/hraban/opus.v2"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/avcodec"
	"github.com/srtwhep/srtwhep/pkg/lograte"
)

const (
	// DefaultBitrate is plenty for stereo music in Opus and a small part of
	// a video stream's bitrate.
	DefaultBitrate = 96000

	// frameTicks is one 20 ms output frame on the 90 kHz clock (exact).
	frameTicks = frameSamples * av.ClockRate / av.OpusClockRate

	// maxSkew is how far an input PTS may sit from where the samples
	// decoded so far put it before the run is restarted: above the
	// 1-tick rounding of TS timestamps, below one lost AAC or MP2 frame
	// (21–26 ms), so a lost frame costs a gap, not lip sync.
	maxSkew = av.ClockRate / 100

	// summaryEvery is the minimum spacing of error WARN lines.
	summaryEvery = 5 * time.Second

	// maxOpusPacket bounds one encoded frame (RFC 6716 allows 1275 bytes
	// per frame).
	maxOpusPacket = 1500
)

// Config configures a Transcoder.
type Config struct {
	// Logger carries path/remote attributes already; nil discards logs.
	Logger *slog.Logger
	// Bitrate of the Opus output in bit/s; 0 means DefaultBitrate.
	// Ignored for Opus input, which passes through as sent.
	Bitrate int
}

// Stats is a snapshot of a Transcoder's counters.
type Stats struct {
	FramesIn  uint64 // coded frames received by Write
	FramesOut uint64 // Opus packets emitted
	Errors    uint64 // frames skipped: undecodable, unencodable, or out of time order
	// CPU is the time spent in Write (decode, resample, encode). The work
	// is compute only and runs on the caller's goroutine, so this is the
	// CPU time it costs.
	CPU time.Duration
}

// Transcoder converts one audio track to Opus. Write and Close must be
// called from one goroutine; Stats from any. It starts no goroutines.
type Transcoder struct {
	log  *slog.Logger
	emit func(*av.AudioFrame)

	pass bool // Opus in: no decoding
	pcm  *pcmSource
	enc  *hopus.Encoder
	buf  []byte

	// The current run of output: see the package comment.
	curPTS  int64 // PTS of the input frame being decoded
	anchor  int64
	segIn   int64 // input samples decoded in this run, at pcm.inRate
	segOut  int64 // output frames of this run
	haveEnd bool
	lastEnd int64 // end of the last emitted frame; output never goes back

	framesIn  atomic.Uint64
	framesOut atomic.Uint64
	errors    atomic.Uint64
	cpu       atomic.Int64

	problems *lograte.Limiter[string, error] // the error lines
}

// New returns a Transcoder for track that calls emit, on Write's
// goroutine, with each Opus packet in PTS order. emit must not modify the
// frame; it may keep it. When the demuxer describes the track again
// (its parameters changed), Close this Transcoder and make a new one.
func New(track av.AudioTrack, cfg Config, emit func(*av.AudioFrame)) (*Transcoder, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	avcodec.Quiet()
	t := &Transcoder{log: log, emit: emit}
	t.problems = lograte.New(summaryEvery, 2, t.writeErrors)
	if track.Codec == av.AudioCodecOpus {
		t.pass = true
		return t, nil
	}
	bitrate := cfg.Bitrate
	if bitrate == 0 {
		bitrate = DefaultBitrate
	}
	enc, err := hopus.NewEncoder(av.OpusClockRate, channels, hopus.AppAudio)
	if err != nil {
		return nil, fmt.Errorf("opus encoder: %w", err)
	}
	if err := enc.SetBitrate(bitrate); err != nil {
		return nil, fmt.Errorf("opus bitrate %d: %w", bitrate, err)
	}
	t.enc, t.buf = enc, make([]byte, maxOpusPacket)
	if t.pcm, err = newPCMSource(track, t.encode, t.startRun); err != nil {
		return nil, err
	}
	return t, nil
}

// Passthrough reports whether the input is Opus and is forwarded as is.
func (t *Transcoder) Passthrough() bool { return t.pass }

// Write takes one coded frame as the demuxer delivers it. Problems are
// counted, summarised in the log and skipped.
func (t *Transcoder) Write(u av.AudioUnit) {
	start := time.Now()
	t.framesIn.Add(1)
	var err error
	if t.pass {
		err = t.forward(u)
	} else if t.pcm != nil {
		err = t.transcode(u)
	}
	if err != nil {
		t.fail(err)
	}
	t.cpu.Add(int64(time.Since(start)))
}

func (t *Transcoder) forward(u av.AudioUnit) error {
	dur := opus.PacketDuration2(u.Data)
	if dur <= 0 {
		return errors.New("Opus packet with an invalid TOC")
	}
	if t.haveEnd && u.PTS < t.lastEnd-maxSkew {
		return fmt.Errorf("Opus packet %.3f s before the previous one ended", float64(t.lastEnd-u.PTS)/av.ClockRate)
	}
	t.haveEnd, t.lastEnd = true, u.PTS+dur*av.ClockRate/av.OpusClockRate
	t.framesOut.Add(1)
	t.emit(&av.AudioFrame{PTS: u.PTS, Duration: int(dur), Data: u.Data})
	return nil
}

func (t *Transcoder) transcode(u av.AudioUnit) error {
	if t.pcm.running() {
		expect := t.anchor + t.segIn*av.ClockRate/int64(t.pcm.inRate())
		if d := u.PTS - expect; d > maxSkew || d < -maxSkew {
			if err := t.pcm.drain(); err != nil {
				t.fail(err)
			}
		}
	}
	t.curPTS = u.PTS
	n, err := t.pcm.decode(u.Data)
	t.segIn += int64(n)
	return err
}

// startRun anchors a new run of output at the input frame being decoded.
func (t *Transcoder) startRun() {
	t.anchor, t.segIn, t.segOut = t.curPTS, 0, 0
}

// encode turns one 20 ms stereo frame into an Opus packet and emits it.
func (t *Transcoder) encode(pcm []float32) error {
	pts := t.anchor + t.segOut*frameTicks
	t.segOut++
	if len(pcm) != frameSamples*channels {
		return fmt.Errorf("resampler gave %d samples, want %d", len(pcm), frameSamples*channels)
	}
	if t.haveEnd && pts < t.lastEnd {
		// A run restarted earlier than the last one ended (the input PTS
		// went back): two frames for one instant cannot both be played.
		return fmt.Errorf("audio frame at %d overlaps the previous one (ends %d); dropped", pts, t.lastEnd)
	}
	n, err := t.enc.EncodeFloat32(pcm, t.buf)
	if err != nil {
		return fmt.Errorf("opus: %w", err)
	}
	t.haveEnd, t.lastEnd = true, pts+frameTicks
	t.framesOut.Add(1)
	t.emit(&av.AudioFrame{PTS: pts, Duration: frameSamples, Data: bytes.Clone(t.buf[:n])})
	return nil
}

// fail counts a skipped frame and logs a summary at most every summaryEvery.
func (t *Transcoder) fail(err error) {
	t.errors.Add(1)
	if n := t.problems.Note("audio", err); n > 0 {
		t.writeErrors("audio", n, err)
	}
}

func (t *Transcoder) writeErrors(_ string, n int, last error) {
	t.log.Warn("audio transcode errors (damaged audio is skipped; video is not affected)",
		"errors", n, "total", t.errors.Load(), "err", last)
}

// Stats returns a snapshot of the counters.
func (t *Transcoder) Stats() Stats {
	return Stats{
		FramesIn:  t.framesIn.Load(),
		FramesOut: t.framesOut.Load(),
		Errors:    t.errors.Load(),
		CPU:       time.Duration(t.cpu.Load()),
	}
}

// Close frees the FFmpeg state. Audio still buffered (under 20 ms) is
// dropped: the publisher is gone. Safe to call more than once.
func (t *Transcoder) Close() {
	t.problems.Close()
	if t.pcm != nil {
		t.pcm.close()
		t.pcm = nil
	}
}
