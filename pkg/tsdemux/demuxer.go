// Package tsdemux turns an MPEG-TS byte stream into H.264 or H.265 access
// units.
//
// It wraps mediacommon's mpegts.Reader and adds what a WebRTC fan-out needs:
// the first H.264 or H.265 track is picked (anything else is reported once),
// PTS is unwrapped to a monotonic 90 kHz clock, the latest parameter sets
// (SPS/PPS; for H.265 VPS/SPS/PPS) are put in front of every keyframe (IDR;
// for H.265 every IRAP picture) so any viewer can start at any keyframe,
// nothing is emitted before a decodable keyframe, and streams that cannot be
// served (no H.264 or H.265, B-frames nobody transcodes) are refused with an
// error that names the fix.
//
// Damage (garbage, lost TS packets, truncated PES, PTS jumps) is never fatal:
// it is counted, summarised at most every 5 s, and when a reference picture is
// known to be lost the output pauses until the next IDR.
package tsdemux

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/lograte"
)

// Errors returned by Run. They are wrapped with details; test with errors.Is.
var (
	// ErrNoH264 means the program has no H.264 or H.265 track; the
	// wrapping text lists the tracks found and the fix. (The name stays
	// from when only H.264 was taken.)
	ErrNoH264 = errors.New("no H.264 or H.265 video track")
	// ErrBFrames means the stream reorders pictures (B-frames). WebRTC
	// browsers cannot play them, so Run ends with this error (after one WARN)
	// at the first B slice or the first picture whose PTS goes back in
	// decode order; the caller ends the publisher with it as the reason.
	// Pictures emitted before that (usually the IDR and one P picture) are
	// harmless. A constant PTS-DTS offset without reordering is accepted.
	ErrBFrames = errors.New("stream has B-frames, which WebRTC browsers cannot play; " +
		"encode with -bf 0 (ffmpeg) or set B-frames to 0 in OBS")
	// ErrNoPMT means no MPEG-TS program map table arrived before the stream
	// ended or before initPMTLimit bytes were read.
	ErrNoPMT = errors.New("no MPEG-TS program map table (PMT) received; is the publisher sending MPEG-TS (ffmpeg -f mpegts)?")
)

const (
	// initPMTLimit bounds what mediacommon buffers while it looks for the
	// PMT (it keeps every byte so it can rewind): a publisher sending
	// garbage must not grow memory without end. Encoders send the PMT
	// within the first few hundred ms. mediacommon's own recorder refuses
	// past 1 MiB with an error that names no fix (this limit was 8 MiB,
	// which it never reached), so ours stops just short of that and says
	// what is wrong. Null packets are dropped before they are recorded
	// (unitcap.go) but count here.
	initPMTLimit = 1<<20 - 16*tsPacketSize

	// summaryEvery is the minimum spacing of decode-error WARN lines.
	summaryEvery = 5 * time.Second
)

// Config configures a Demuxer.
type Config struct {
	// Logger carries path/remote attributes already; nil discards logs.
	Logger *slog.Logger
	// OnInfo is called on Run's goroutine when the SPS is first seen or
	// when width, height, profile or frame rate change. May be nil.
	OnInfo func(av.StreamInfo)

	// OnAudio receives every coded frame of the first readable audio track
	// (AAC in ADTS or LATM, MPEG-1 audio layer II/III, Opus), on Run's
	// goroutine, in PTS order, with PTS on the video's clock. Nil leaves
	// audio unread. It cannot fail: audio trouble must never end the
	// stream, so the callee counts and skips what it cannot use. Data is
	// not reused by the demuxer; the callee may keep it but not modify it.
	OnAudio func(av.AudioUnit)
	// OnAudioFound is called once, before any media is emitted, when the
	// program has an audio track that OnAudio will deliver, so a consumer
	// can announce audio to viewers that join before its first frame.
	// May be nil.
	OnAudioFound func(av.AudioCodec)
	// OnAudioTrack is called before the first OnAudio, and again whenever
	// the codec parameters change (a consumer then rebuilds its decoder).
	// May be nil.
	OnAudioTrack func(av.AudioTrack)
	// OnSkip is called on Run's goroutine when damage makes the output
	// skip to the next IDR (not for the wait for the first IDR). The
	// demuxer sees only the damage; a consumer that knows its transport
	// lost data returns true, and the skipped pictures then also count in
	// Stats.DroppedTransport. May be nil.
	OnSkip func(cause error) (transportLoss bool)
	// OnSkipped is called on Run's goroutine when the output resumes at
	// the IDR that ends a skip. May be nil.
	OnSkipped func(Skip)
	// OnStart is called once on Run's goroutine when the stream is
	// recognised (program tables read, H.264 track found), before any
	// other callback and before the first access unit. A consumer that
	// must not act on garbage (claim a path, announce it) does it here;
	// an error ends Run with it. May be nil.
	OnStart func() error
	// MaxUnitBytes caps the payload of one PES (access unit) being
	// assembled; past it the unit is dropped up to the next unit start
	// and one warning says why. 0 means DefaultMaxUnitBytes.
	MaxUnitBytes int
	// TablesBudget, shared by the demuxers of one server, bounds the
	// bytes they buffer together before their program tables (nil:
	// unbounded but for each one's own limit).
	TablesBudget *Budget
	// OnBFrames is called once on Run's goroutine at the first sign of
	// B-frames. True means the consumer transcodes the video (pkg/ingest
	// with video: auto or transcode): access units then keep coming in
	// decode order, each with its own PTS (not monotonic), and never reach
	// a viewer as they are. False, or nil, refuses the stream with
	// ErrBFrames.
	OnBFrames func() bool
}

// Skip describes one finished skip to the next IDR.
type Skip struct {
	Frames        uint64 // pictures dropped, the damaged one included
	Cause         error  // the damage that started it
	TransportLoss bool   // what OnSkip returned
}

// Stats is a snapshot of a Demuxer's counters.
type Stats struct {
	DecodeErrors uint64 // TS and H.264 problems skipped (garbage, lost pictures, PTS jumps, ...)
	AccessUnits  uint64 // access units emitted
	IDRs         uint64 // IDR access units emitted
	DroppedAUs   uint64 // access units dropped while waiting for a decodable IDR
	// DroppedTransport is the part of DroppedAUs dropped in skips that
	// OnSkip blamed on the transport.
	DroppedTransport uint64
	BFramesDropped   uint64 // B-frame access units refused (Run ends with ErrBFrames at the first)
	Bytes            uint64 // MPEG-TS bytes read from the reader
	AudioUnits       uint64 // audio frames handed to OnAudio
	AudioErrors      uint64 // audio PES or frames skipped (parse errors, implausible PTS)
	UnitsCapped      uint64 // PES dropped for growing past MaxUnitBytes
}

// Demuxer reads MPEG-TS from an io.Reader and emits H.264 access units.
// Run must be called at most once; Stats may be called from any goroutine.
type Demuxer struct {
	r            io.Reader
	log          *slog.Logger
	onInfo       func(av.StreamInfo)
	onAudio      func(av.AudioUnit)
	onAudioTrack func(av.AudioTrack)
	onAudioFound func(av.AudioCodec)
	onSkip       func(error) bool
	onSkipped    func(Skip)
	onStart      func() error
	onBFrames    func() bool

	initLimit int64 // initPMTLimit, lowered by tests
	maxUnit   int
	budget    *Budget

	// Owned by Run's goroutine: the chosen video PID (-1 before the
	// program tables).
	videoPID int
	// followPIDs are the tracks read (video, audio), set by pickTrack.
	followPIDs []uint16
	// capLog spaces the unit-cap warnings; each carries the units dropped
	// since the last (no summary of its own).
	capLog *lograte.Limiter[string, struct{}]

	decodeErrors   atomic.Uint64
	accessUnits    atomic.Uint64
	idrs           atomic.Uint64
	droppedAUs     atomic.Uint64
	droppedTransp  atomic.Uint64
	bFramesDropped atomic.Uint64
	bytes          atomic.Uint64
	audioUnits     atomic.Uint64
	audioErrors    atomic.Uint64
	unitsCapped    atomic.Uint64

	errs *lograte.Limiter[string, error] // the decode-error lines, by kind

	// Everything below is owned by Run's goroutine.
	video videoState
	audio audioState
}

// New returns a Demuxer reading from r. It starts nothing.
func New(r io.Reader, cfg Config) *Demuxer {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Demuxer{r: r, log: log, onInfo: cfg.OnInfo, onAudio: cfg.OnAudio, onAudioTrack: cfg.OnAudioTrack,
		onAudioFound: cfg.OnAudioFound, onSkip: cfg.OnSkip, onSkipped: cfg.OnSkipped, onStart: cfg.OnStart,
		onBFrames: cfg.OnBFrames, initLimit: initPMTLimit, maxUnit: cmp.Or(cfg.MaxUnitBytes, DefaultMaxUnitBytes),
		budget: cfg.TablesBudget, videoPID: -1}
	d.errs = lograte.New(summaryEvery, 3, d.writeErrors) // two kinds and the spare
	d.capLog = lograte.New[string, struct{}](capLogEvery, 2, nil)
	return d
}

// Stats returns a snapshot of the counters.
func (d *Demuxer) Stats() Stats {
	return Stats{
		DecodeErrors: d.decodeErrors.Load(),
		AccessUnits:  d.accessUnits.Load(),
		IDRs:         d.idrs.Load(),
		// Loaded before droppedAUs, which counts every one of them
		// first, so the part never exceeds the whole.
		DroppedTransport: d.droppedTransp.Load(),
		DroppedAUs:       d.droppedAUs.Load(),
		BFramesDropped:   d.bFramesDropped.Load(),
		Bytes:            d.bytes.Load(),
		AudioUnits:       d.audioUnits.Load(),
		AudioErrors:      d.audioErrors.Load(),
		UnitsCapped:      d.unitsCapped.Load(),
	}
}

// Run reads until the reader fails or ends, or ctx ends, and calls emit on
// Run's goroutine for every access unit, in decode order, starting with an
// IDR that carries SPS and PPS. emit must not modify the access unit.
//
// Run returns nil when the reader returns io.EOF, the error of emit if emit
// fails, ctx.Err() once ctx has ended, ErrNoPMT, ErrNoH264 or ErrBFrames
// (wrapped with details) for streams that cannot be served, or the reader's
// own error otherwise.
//
// Cancellation is only observed between reads: a Read blocked on the
// network is not interrupted by ctx. The caller must close the reader when
// it cancels (as srt does with the socket) so Run returns promptly.
func (d *Demuxer) Run(ctx context.Context, emit func(*av.AccessUnit) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	mr := &meteredReader{ctx: ctx, r: d.r, bytes: &d.bytes, limit: d.initLimit, budget: d.budget}
	uc := newUnitCap(mr, d.maxUnit, d.unitCapped)
	tr := &mpegts.Reader{R: uc}
	err := tr.Initialize()
	mr.endInit()
	if err != nil {
		return d.initError(ctx, err, mr)
	}

	track, err := d.pickTrack(tr)
	if err != nil {
		return err
	}
	d.videoPID = int(track.PID)
	d.video.init()
	tr.OnDecodeError(d.decodeError)
	if _, ok := track.Codec.(*mpegts.CodecH265); ok {
		d.video.codec = av.CodecH265
		tr.OnDataH265(track, func(pts, dts int64, au [][]byte) error {
			return d.onAccessUnitH265(pts, dts, au, emit)
		})
	} else {
		tr.OnDataH264(track, func(pts, dts int64, au [][]byte) error {
			return d.onAccessUnit(pts, dts, au, emit)
		})
	}
	defer d.flushSummary()
	// From here mediacommon hands on the PES of the tracks it was given
	// callbacks for and drops the rest once assembled: assembling them
	// (up to MaxUnitBytes each, on as many PIDs as a sender invents) is
	// only memory, so the TS reader sees those tracks and nothing else.
	uc.follow(d.followPIDs)

	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := tr.Read()
		if err == nil {
			continue
		}
		switch {
		case ctx.Err() != nil:
			return ctx.Err() // closing the reader on cancel often reads as EOF
		case errors.Is(err, io.EOF):
			return nil
		}
		return err
	}
}

// pickTrack selects the first H.264 track and, when audio is wanted, the
// first readable audio track; it reports the others once.
func (d *Demuxer) pickTrack(tr *mpegts.Reader) (*mpegts.Track, error) {
	tracks := tr.Tracks()
	var video *mpegts.Track
	names := make([]string, 0, len(tracks))
	for _, t := range tracks {
		names = append(names, codecName(t.Codec))
		switch t.Codec.(type) {
		case *mpegts.CodecH264, *mpegts.CodecH265:
			if video == nil {
				video = t
			}
		}
	}
	found := joinOr(names, "no tracks")

	if video == nil {
		return nil, fmt.Errorf("%w; found: %s — publish with -c:v libx264 -bf 0", ErrNoH264, found)
	}
	d.log.Info("MPEG-TS tracks", "tracks", found, "video_pid", video.PID)
	// Here and not after the audio track is picked: OnAudioFound may
	// already need what OnStart sets up.
	if d.onStart != nil {
		if err := d.onStart(); err != nil {
			return nil, err
		}
	}

	var audio *mpegts.Track
	if d.onAudio != nil {
		audio = d.pickAudio(tr, tracks)
	}
	d.followPIDs = []uint16{video.PID}
	if audio != nil {
		d.followPIDs = append(d.followPIDs, audio.PID)
	}
	var ignored []string
	for _, t := range tracks {
		if t != video && t != audio {
			ignored = append(ignored, fmt.Sprintf("%s (PID %d)", codecName(t.Codec), t.PID))
		}
	}
	if len(ignored) > 0 {
		why := "only one video track (H.264 or H.265) and one audio track are forwarded"
		if d.onAudio == nil {
			why = "only one video track (H.264 or H.265) is forwarded; audio is off"
		}
		d.log.Info("ignoring tracks: "+why, "ignored", joinOr(ignored, ""))
	}
	return video, nil
}

// decodeError counts a non-fatal problem and may log a summary.
func (d *Demuxer) decodeError(err error) {
	d.decodeErrors.Add(1)
	d.noteError(videoErrorsMsg, err)
}

// The two summaries, each a kind of its own: audio damage must never read
// as a video problem.
const (
	videoErrorsMsg = "MPEG-TS/H.264 decode errors (pictures that cannot be decoded are skipped until the next IDR)"
	audioErrorsMsg = "audio decode errors (damaged audio is skipped; video is not affected)"
)

// noteError logs err's line now, standing for the errors held since the
// last, or holds it for the kind's summary: per-packet errors on a
// damaged link would otherwise flood the log.
func (d *Demuxer) noteError(kind string, err error) {
	if n := d.errs.Note(kind, err); n > 0 {
		d.writeErrors(kind, n, err)
	}
}

func (d *Demuxer) writeErrors(kind string, n int, last error) {
	total := d.decodeErrors.Load()
	if kind == audioErrorsMsg {
		total = d.audioErrors.Load()
	}
	d.log.Warn(kind, "errors", n, "total", total, "last_error", last.Error())
}

// maybeSummarise writes the summaries that are due, so those of a burst
// that stopped come with the next unit rather than the next error.
func (d *Demuxer) maybeSummarise() { d.errs.Flush() }

func (d *Demuxer) flushSummary() { d.errs.Close() }
