// Package vtranscode turns one path's video into H.264 a browser plays:
// Constrained Baseline, 8-bit 4:2:0, no B-frames, an IDR every
// KeyframeInterval, tuned for latency (libx264 zerolatency: no lookahead,
// no frame threads). The input is H.264 (with B-frames, 10-bit or 4:4:4)
// or H.265, decoded with libavcodec; pictures that are not 8-bit 4:2:0
// are converted with libswscale.
//
// One Transcoder serves a whole path: its output is written to the hub
// like a publisher's access units, so every viewer that needs it shares
// one decode and one encode.
//
// Timestamps: the decoder returns pictures in presentation order carrying
// the PTS of the access unit they came from, and the encoder keeps it, so
// output PTS are the publisher's PTS on the 90 kHz clock and lip sync with
// the (separately transcoded) audio holds.
//
// The output is capped: no taller than MaxHeight (the width follows the
// aspect ratio, both even) and no faster than MaxFPS (pictures dropped
// evenly, the kept ones keeping their timestamps), because a 1080p60
// source transcoded at full size costs most of a small server's core and
// a viewer's browser gains little from it. Pictures larger than
// MaxDecodeArea are refused by the decoder before it allocates them.
//
// The work runs on one goroutine, locked to its OS thread so the CPU it
// costs can be read from the thread's own clock (Stats.CPU, and
// Stats.Load over the last few seconds, which the CPU budget holds). The
// input queue is bounded in units and in bytes: when the encoder falls
// behind, input is dropped up to the next IDR (a decoder cannot resume
// on anything else), counted and logged.
package vtranscode

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/avcodec"
	"github.com/srtwhep/srtwhep/pkg/lograte"
)

// Codec is the coding of the input.
type Codec int

// Input codecs.
const (
	CodecH264 Codec = iota
	CodecH265
)

func (c Codec) avcodec() avcodec.Codec {
	if c == CodecH265 {
		return avcodec.HEVC
	}
	return avcodec.H264
}

func (c Codec) String() string {
	if c == CodecH265 {
		return "H.265"
	}
	return "H.264"
}

// Defaults for the zero values of Config.
const (
	DefaultBitrate          = 2_500_000
	DefaultFPS              = 30
	DefaultKeyframeInterval = 2 * time.Second
	// DefaultPreset is the cheapest x264 preset: 720p30 stays well inside
	// the budget of 30 % of one core, decode included.
	DefaultPreset = "ultrafast"
	// DefaultQueueSize is about 2 s of 30 fps input: a scheduling hiccup on a
	// loaded machine, not a sustained overload, fits.
	DefaultQueueSize = 64
	// DefaultQueueBytes bounds the same queue in bytes: 2 s of a 4K
	// source at 32 Mbit/s. Counting units alone let 64 huge access units
	// (a hostile publisher's, up to the demuxer's 4 MiB unit cap each)
	// hold 256 MiB.
	DefaultQueueBytes = 8 << 20

	// summaryEvery is the minimum spacing of drop and error WARN lines.
	summaryEvery = 5 * time.Second
	// arrivals remembers when the pictures in flight arrived, so output
	// carries its input's arrival time (the server's latency metric then
	// includes the transcoder); it bounds pictures in flight in the
	// decoder (reordering) and encoder (none with zerolatency).
	arrivals = 32
	// Bitrates outside this range are measurement accidents (a few
	// pictures of a still image, a burst).
	minBitrate, maxBitrate = 200_000, 20_000_000
)

// Config configures a Transcoder.
type Config struct {
	// Logger carries path/remote attributes already; nil discards logs.
	Logger *slog.Logger
	Codec  Codec
	// Bitrate of the output in bit/s, usually the source's; 0 means
	// DefaultBitrate. Clamped to 200 kbit/s … 20 Mbit/s.
	Bitrate int
	// FPS of the source, for the keyframe interval in frames; 0 means
	// DefaultFPS.
	FPS float64
	// KeyframeInterval between IDRs; 0 means DefaultKeyframeInterval.
	KeyframeInterval time.Duration
	// Preset is libx264's preset; "" means DefaultPreset.
	Preset string
	// QueueSize bounds the access units waiting for the decoder; 0 means
	// DefaultQueueSize.
	QueueSize int
	// QueueBytes bounds their bytes (av.AccessUnit.Size); 0 means
	// DefaultQueueBytes. A unit that does not fit is dropped like one
	// past QueueSize.
	QueueBytes int
	// MaxHeight caps the output's height (the width follows the source's
	// aspect ratio; both even); 0: the source's size.
	MaxHeight int
	// MaxFPS caps the output's frame rate: pictures are dropped evenly
	// (after decoding, which the references need); 0: every picture.
	MaxFPS float64
	// MaxDecodeArea refuses source pictures of more pixels than this
	// before the decoder allocates them; 0: FFmpeg's own limit.
	MaxDecodeArea int
	// After, when set, holds the output back to pictures presented after
	// it: a path switching from passthrough to the transcoder feeds the
	// cached GOP so the decoder has its references, and the viewers must
	// not see a picture twice or a PTS go back.
	After    int64
	HasAfter bool
	// FollowIDR makes every picture that was an IDR in the source an IDR
	// of the output too (KeyframeInterval then only bounds a source GOP
	// longer than it): a rendition of a path whose viewers switch between
	// it and the source at IDRs.
	FollowIDR bool
}

// Stats is a snapshot of a Transcoder's counters.
type Stats struct {
	FramesIn  uint64 // access units accepted by Write
	FramesOut uint64 // access units emitted
	IDRsOut   uint64 // of them IDRs
	Dropped   uint64 // access units dropped: queue full, or waiting for the next IDR after that
	Errors    uint64 // decode or encode failures (the picture is skipped)
	// CPU is the thread CPU time of the transcoder's goroutine: decode,
	// conversion and encode.
	CPU time.Duration
	// Load is the share of one core the transcoder used over its last
	// loadWindow (decode, conversion and encode); 0 until one passed.
	Load float64
	// Skipped counts pictures decoded but not encoded for MaxFPS.
	Skipped uint64
	// LatencySum over LatencyCount pictures: from the source picture's
	// arrival to its transcoded picture's emission.
	LatencySum   time.Duration
	LatencyCount uint64
	LatencyMax   time.Duration
	// OutWidth, OutHeight are the encoder's picture size; 0 before the
	// first picture.
	OutWidth, OutHeight int
}

// Transcoder decodes one video track and encodes it to H.264. Write and
// Close must be called from one goroutine; Stats and SetBitrate from any.
// emit is called on the goroutine that runs Run.
type Transcoder struct {
	cfg  Config
	log  *slog.Logger
	emit func(*av.AccessUnit)

	in      chan *av.AccessUnit
	done    chan struct{} // closed by Close
	exited  chan struct{} // closed when Run returns
	claimed atomic.Bool   // Run ran, or Close freed what Run would have
	once    sync.Once

	waitIDR bool         // Write's goroutine only: dropping up to the next IDR
	queued  atomic.Int64 // bytes in the queue (in)

	bitrate atomic.Int64 // requested by SetBitrate; 0: none
	// An IDR requested by RequestIDR, for the first picture after
	// idrAfter.
	idrWanted atomic.Bool
	idrAfter  atomic.Int64

	framesIn, framesOut, idrsOut atomic.Uint64
	dropped, errors, skipped     atomic.Uint64
	cpu, latSum, latMax          atomic.Int64
	latCount                     atomic.Uint64
	loadX1e6                     atomic.Int64 // Stats.Load × 1e6
	outSize                      atomic.Int64 // width<<32 | height

	// Owned by the run goroutine.
	rate     int // bit/s the encoder runs at
	dec      *avcodec.Decoder
	enc      *avcodec.Encoder
	annexB   []byte
	arrived  [arrivals]arrival
	next     int
	lastOut  int64
	haveOut  bool
	started  bool   // the decoder has had its first IDR
	encIn    [2]int // the source size the encoder was opened for
	rateBase int64  // MaxFPS: the PTS slots are counted from
	lastSlot int64  // the slot of the last picture kept
	haveSlot bool
	problems *lograte.Limiter[string, error] // the problem lines
}

type arrival struct {
	pts int64
	at  time.Time
	idr bool // the source's access unit was an IDR
}

// New opens the decoder; it starts nothing until Run. The encoder opens
// at the first decoded picture, whose size it takes.
func New(cfg Config, emit func(*av.AccessUnit)) (*Transcoder, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Bitrate == 0 {
		cfg.Bitrate = DefaultBitrate
	}
	cfg.Bitrate = min(max(cfg.Bitrate, minBitrate), maxBitrate)
	if cfg.FPS <= 0 {
		cfg.FPS = DefaultFPS
	}
	if cfg.KeyframeInterval <= 0 {
		cfg.KeyframeInterval = DefaultKeyframeInterval
	}
	if cfg.Preset == "" {
		cfg.Preset = DefaultPreset
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.QueueBytes <= 0 {
		cfg.QueueBytes = DefaultQueueBytes
	}
	avcodec.Quiet()
	dec, err := avcodec.OpenDecoder(cfg.Codec.avcodec(), avcodec.DecoderConfig{Clock90k: true, MaxPixels: cfg.MaxDecodeArea})
	if err != nil {
		return nil, err
	}
	t := &Transcoder{cfg: cfg, log: cfg.Logger, emit: emit, dec: dec,
		in: make(chan *av.AccessUnit, cfg.QueueSize), done: make(chan struct{}), exited: make(chan struct{}),
		lastOut: cfg.After, haveOut: cfg.HasAfter, rate: cfg.Bitrate}
	t.problems = lograte.New(summaryEvery, 2, t.writeProblems)
	return t, nil
}

// Params describes what the encoder was started with, for the log line
// that says what transcoding costs.
func (t *Transcoder) Params() (bitrate int, keyint time.Duration, preset string) {
	return t.cfg.Bitrate, t.cfg.KeyframeInterval, t.cfg.Preset
}

// Write queues one access unit in decode order. It never blocks: with the
// queue full the unit is dropped, and so is everything up to the next IDR.
func (t *Transcoder) Write(au *av.AccessUnit) {
	if t.waitIDR && !au.IDR {
		t.dropped.Add(1)
		return
	}
	select {
	case <-t.done:
		return
	default:
	}
	size := int64(unitBytes(au))
	if t.queued.Load()+size > int64(t.cfg.QueueBytes) {
		t.waitIDR = true
		t.dropped.Add(1)
		return
	}
	t.queued.Add(size)
	select {
	case t.in <- au:
		t.waitIDR = false
		t.framesIn.Add(1)
	default:
		t.queued.Add(-size)
		t.waitIDR = true
		t.dropped.Add(1)
	}
}

// SetBitrate changes the output bitrate from the next picture on (clamped
// like Config.Bitrate), so the output follows the source's rate. The
// encoder restarts with it: the next picture is an IDR.
func (t *Transcoder) SetBitrate(bps int) {
	t.bitrate.Store(int64(min(max(bps, minBitrate), maxBitrate)))
}

// RequestIDR makes the first picture presented after PTS after an IDR
// (a later request replaces an earlier one still pending): a viewer that
// moves onto the output holds its picture at after and goes on from it.
func (t *Transcoder) RequestIDR(after int64) {
	t.idrAfter.Store(after)
	t.idrWanted.Store(true)
}

// Stats returns a snapshot of the counters.
func (t *Transcoder) Stats() Stats {
	return Stats{
		FramesIn: t.framesIn.Load(), FramesOut: t.framesOut.Load(), IDRsOut: t.idrsOut.Load(),
		Dropped: t.dropped.Load(), Errors: t.errors.Load(), CPU: time.Duration(t.cpu.Load()),
		Load: float64(t.loadX1e6.Load()) / 1e6, Skipped: t.skipped.Load(),
		LatencySum: time.Duration(t.latSum.Load()), LatencyCount: t.latCount.Load(),
		LatencyMax: time.Duration(t.latMax.Load()),
		OutWidth:   int(t.outSize.Load() >> 32), OutHeight: int(t.outSize.Load() & 0xffffffff),
	}
}

// Close stops Run, waits for it to return and frees the FFmpeg state;
// pictures still queued are dropped (the path no longer needs them).
// Safe to call more than once, and without Run (which then returns at
// once if called later).
func (t *Transcoder) Close() {
	t.once.Do(func() { close(t.done) })
	if t.claimed.CompareAndSwap(false, true) {
		t.free()
		close(t.exited)
		return
	}
	<-t.exited
}

// unitBytes is au's size for the queue's byte bound: Size as the
// demuxer counts it, or the NAL units' sum when it was not set.
func unitBytes(au *av.AccessUnit) int {
	if au.Size > 0 {
		return au.Size
	}
	n := 0
	for _, nalu := range au.NALUs {
		n += len(nalu)
	}
	return n
}
