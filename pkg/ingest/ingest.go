// Package ingest owns each publisher from its first byte to its last: the
// SRT connection, the access decisions too slow for libsrt's handshake
// thread, the MPEG-TS demuxer, the RTP payloads cut once per access unit and
// the hub path the viewers read. It is the one place that knows all of a
// publisher's counters, so the API and the metrics read one Stats() instead
// of joining the SRT, demuxer and hub views by path name.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/events"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/srt"
	"github.com/srtwhep/srtwhep/pkg/tsdemux"
)

// Config configures a Manager. Hub and Policy are required.
type Config struct {
	Hub *hub.Hub
	// Policy decides who may publish: its local checks in Admit, during
	// the SRT handshake, and its hook on the publisher's own goroutine
	// before any media is used, because a hook waiting on the network in
	// the listen callback would stall every SRT connection of the port.
	Policy *auth.Policy
	// Keep returns the configured path names: their statistics are
	// reported even while nobody publishes, so an alert on a missing
	// publisher has a series to fire on.
	Keep func() []string
	// Audio returns the audio settings of a path (nil: AudioAuto at the
	// transcoder's default bitrate). It is read when the publisher's audio
	// track is found, so a reload applies to the next publisher.
	Audio func(path string) AudioSettings
	// Video returns the video settings of a path (nil: VideoAuto with
	// DefaultMaxKeyframeInterval), read when a publisher connects.
	Video func(path string) VideoSettings
	// Handover returns how a path changes hands between publishers (nil:
	// DefaultHandover). It is read when a publisher connects and when it
	// claims the path, so a reload applies to the next publisher.
	Handover func(path string) Handover
	// MaxUnitBytes returns a path's cap on one access unit being
	// assembled (nil or 0: tsdemux.DefaultMaxUnitBytes). It is read when
	// a publisher connects.
	MaxUnitBytes func(path string) int
	// Transcode bounds every video transcode (zero: no budget, no caps).
	Transcode TranscodeLimits
	// Events receives publisher.connected when a publisher's path goes
	// live and publisher.disconnected when it ends (nil: none).
	Events events.Func
	Logger *slog.Logger
}

// AudioSettings say what a path does with its publisher's audio.
type AudioSettings struct {
	Off     bool // video only
	Bitrate int  // Opus bit/s for transcoded audio; 0 = the transcoder's default
}

// recentFor is how long a path that had a publisher keeps its statistics
// after the publisher left; maxRemembered bounds how many such paths are
// kept, so probing path names cannot grow memory.
const (
	recentFor     = time.Hour
	maxRemembered = 1000
)

// Manager runs the publishers. Serve is srt.Config.Serve.
type Manager struct {
	cfg Config
	log *slog.Logger

	mu sync.Mutex
	// live: by path, the publisher that claimed it (connwatch.go); at
	// most one per path. pending: by path, the connections that have not
	// delivered a picture yet, oldest first.
	live    map[string]*publisher
	pending map[string][]*publisher
	past    map[string]*history // by path: totals of ended publishers

	// problems says, per path, why viewers get no picture (refusals.go).
	problems problems
	// held: lines held back for publishers between PublisherLog and
	// serve (one entry per connection, taken at its start).
	heldMu sync.Mutex
	held   map[string]*heldLog
	// pictureWait is how long video may come without a decodable IDR
	// before the warning; 0 is defaultPictureWait (tests shorten it).
	pictureWait time.Duration
	// watchTimes are connWatch's limits; zero fields are the defaults
	// (tests shorten them).
	watchTimes watchTimes
	// closed counts the connections connWatch closed, by reason.
	closedMu sync.Mutex
	closed   map[string]uint64
	// tables bounds the bytes all publishers buffer together before
	// their program tables (tsdemux.Budget).
	tables *tsdemux.Budget
	// areaRefused counts transcodes refused for transcode.maxDecodeArea.
	areaRefused atomic.Uint64
}

// conn is what a publisher's pipeline uses of its connection. Serve hands
// it an *srt.Conn; the tests hand it MPEG-TS from memory, so the pipeline
// from the first byte to the hub runs without a socket. Read must return
// io.EOF once CloseWith was called, as srt.Conn's does.
type conn interface {
	io.Reader
	Path() string
	Remote() string
	StreamID() srt.StreamID
	// Dialed: this server opened the connection (an edge's pull).
	Dialed() bool
	Stats() srt.Stats
	CloseWith(reason string)
	EndReason() string
	SocketID() int
}

// publisher is one connection's pipeline.
type publisher struct {
	conn  conn
	since time.Time

	// Set on the publisher's goroutine once the stream has started; read
	// by Stats from any goroutine.
	hubPub atomic.Pointer[hub.Publisher]
	demux  atomic.Pointer[tsdemux.Demuxer]
	info   atomic.Pointer[av.StreamInfo]
	audio  audioPipeline
	video  videoPipeline
	loss   *lossAdvisor // set before the publisher is shared
	// replaced: a newer publisher took the path over, or claimed it
	// while this one was pending (guarded by Manager.mu), so this one
	// must not claim it back.
	replaced bool
	// lastMedia is when the connection last delivered media (Unix
	// nanoseconds, connWatch), for the stalled-publisher rule.
	lastMedia atomic.Int64
}

// New returns a Manager; it starts nothing.
func New(cfg Config) *Manager {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Keep == nil {
		cfg.Keep = func() []string { return nil }
	}
	m := &Manager{
		cfg:     cfg,
		log:     log.With("component", "ingest"),
		live:    map[string]*publisher{},
		pending: map[string][]*publisher{},
		past:    map[string]*history{},
		closed:  map[string]uint64{},
		tables:  tsdemux.NewBudget(0),
	}
	m.problems.init()
	m.held = map[string]*heldLog{}
	return m
}

// Admit is srt.Config.Admit: it runs in the SRT listen callback on
// libsrt's receive thread, which serves every SRT connection of the port,
// so it only applies the policy's local checks and this manager's busy
// flag (its own short lock, never the hub's). The hook is asked later, in
// Serve. Only a claimed path is busy (connwatch.go).
func (m *Manager) Admit(req srt.Request) error {
	id := req.StreamID
	if err := m.cfg.Policy.CheckPublisher(auth.Publisher{Path: id.Path, Remote: req.Remote, User: id.User, Pass: id.Pass}); err != nil {
		return err
	}
	ho := m.handover(id.Path)
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.live[id.Path]; old != nil {
		return mayTakeOver(m.rule(ho, old), id.Path, req.Remote, old)
	}
	return nil
}

// Serve is srt.Config.Serve. It runs one publisher: ask the hook, claim the hub path, then socket →
// TS demux → RTP payloads cut once → hub, until the stream ends. Nothing
// here waits on viewers.
func (m *Manager) Serve(ctx context.Context, c *srt.Conn) error { return m.serve(ctx, c) }

// serve is Serve for any conn.
func (m *Manager) serve(ctx context.Context, c conn) error {
	p := &publisher{conn: c, since: time.Now()}
	path := c.Path()
	held := m.holdFor(path, c.Remote())
	// Any end but the same refusal again writes what was held (an early
	// return included); noteEnd decides first when it gets there.
	defer held.release(true)
	base := m.log
	if held != nil {
		base = held.logger(m.log)
	}
	p.loss = newLossAdvisor(c.Stats, base.With("path", path, "remote", c.Remote()))
	ho := m.handover(path)
	m.mu.Lock()
	if old := m.live[path]; old != nil {
		if err := mayTakeOver(m.rule(ho, old), path, c.Remote(), old); err != nil {
			m.mu.Unlock()
			// The listen callback's check raced with another publisher.
			return fmt.Errorf("%w (another publisher took the path during the handshake)", err)
		}
	}
	m.addPendingLocked(path, p)
	m.mu.Unlock()
	defer m.retire(path, p)

	id := c.StreamID()
	// A pull (c.Dialed) is this server's own configuration at work, not a
	// publisher asking to be let in: the hook is not asked about it.
	if !c.Dialed() {
		if err := m.cfg.Policy.AskHookPublisher(ctx, auth.Publisher{Path: path, Remote: c.Remote(), User: id.User, Pass: id.Pass}); err != nil {
			return err
		}
	}
	log := base.With("path", path, "remote", c.Remote())
	settings := AudioSettings{}
	if m.cfg.Audio != nil {
		settings = m.cfg.Audio(path)
	}
	var video VideoSettings
	if m.cfg.Video != nil {
		video = m.cfg.Video(path)
	}
	// The path is claimed only with the stream's first decodable picture
	// (connwatch.go): a publisher the hook refuses, one sending garbage or
	// padding inside a valid SRT connection, or one whose video never
	// becomes a picture, never disturbs the one streaming nor keeps the
	// path from the next one, nor makes it look live. What the demuxer
	// reports before then waits in early, replayed at the claim; audio
	// frames past maxGated are dropped. Everything here runs on Run's
	// goroutine.
	var (
		pub        *hub.Publisher
		early      []func()
		earlyAudio int
		watch      *connWatch
	)
	later := func(f func()) {
		if pub != nil {
			f()
			return
		}
		// Bounded for a stream that changes its tracks and never shows
		// a picture: it claims nothing, so what it loses is its own.
		if len(early) < 2*maxGated {
			early = append(early, f)
		}
	}
	claimPath := func() error {
		var err error
		if pub, err = m.claim(path, p); err != nil {
			return err
		}
		p.hubPub.Store(pub)
		p.audio.init(pub, settings, log)
		p.video.init(pub, video, log)
		p.video.limits = m.cfg.Transcode
		p.video.refusals = m.refusalSink(c)
		m.publisherEvent(events.PublisherConnected, c, "")
		for _, f := range early {
			f()
		}
		early = nil
		return nil
	}
	start := func() error {
		watch.sawTables()
		return nil
	}
	defer func() {
		if pub != nil {
			p.video.close()
			p.audio.close()
			pub.Close()
		}
	}()
	maxUnit := 0
	if m.cfg.MaxUnitBytes != nil {
		maxUnit = m.cfg.MaxUnitBytes(path)
	}
	var profileWarned bool
	sinceIDR := 0 // pictures from the first IDR on, up to provenAfter
	// Decided before the claim, which ends the grace period it looks for.
	gt := m.newGate(path, video.Mode)
	writeAudio := p.audio.write
	if gt != nil {
		writeAudio = func(u av.AudioUnit) {
			if !gt.hold(func() { p.audio.write(u) }) {
				p.audio.write(u)
			}
		}
	}
	d := tsdemux.New(c, tsdemux.Config{Logger: log, MaxUnitBytes: maxUnit, TablesBudget: m.tables, OnStart: start, OnInfo: func(info av.StreamInfo) {
		p.info.Store(&info)
		later(func() {
			pub.SetInfo(info)
			p.video.setInfo(info)
			m.checkProfile(c, video.Mode, info, &profileWarned)
		})
		log.Info("stream parameters", "codec", info.Codec, "profile", info.Profile,
			"width", info.Width, "height", info.Height, "fps", info.FPS)
	}, OnAudioFound: func(codec av.AudioCodec) { later(func() { p.audio.found(codec) }) },
		OnAudioTrack: func(t av.AudioTrack) { later(func() { p.audio.track(t) }) },
		OnAudio: func(u av.AudioUnit) {
			if pub != nil {
				writeAudio(u)
			} else if earlyAudio < maxGated && len(early) < 2*maxGated {
				earlyAudio++
				early = append(early, func() { writeAudio(u) })
			}
		},
		OnSkip: p.loss.skip, OnSkipped: p.loss.skipped, OnBFrames: p.video.bframes})
	p.demux.Store(d)
	watch = m.watchConn(p, d)
	pictures := m.watchPicture(c, d)
	err := d.Run(ctx, func(au *av.AccessUnit) error {
		// The demuxer hands over nothing before a decodable IDR.
		if pub == nil {
			if err := claimPath(); err != nil {
				return err
			}
		}
		proven := false
		if (au.IDR || sinceIDR > 0) && sinceIDR < provenAfter {
			sinceIDR++
			proven = sinceIDR == provenAfter
		}
		if gt == nil || !gt.hold(func() { p.video.write(au) }) {
			p.video.write(au)
		}
		if proven {
			pictures.proven()
			held.release(true)
			gt.release()
		}
		return nil
	})
	pictures.stop()
	// Closed for showing no stream, or superseded while pending: the end
	// is no refusal of its stream (a squatter's padding must not put a
	// "not MPEG-TS" problem on the path its encoder streams on).
	if why := watch.stop(); why != "" {
		err = errors.New(why)
	} else if c.EndReason() == reasonSuperseded {
		err = errors.New(reasonSuperseded)
	}
	m.noteEnd(c, err, held)
	err = withFix(err)
	p.loss.flush(c.Stats(), time.Now())
	if pub != nil {
		m.publisherEvent(events.PublisherDisconnected, c, endReason(ctx, c, err))
	}
	return err
}

// Kick closes the publisher of path with reason "kicked", and the
// connections pending on it; false when there is none.
func (m *Manager) Kick(path string) bool {
	m.mu.Lock()
	ps := slices.Clone(m.pending[path])
	if p := m.live[path]; p != nil {
		ps = append(ps, p)
	}
	m.mu.Unlock()
	for _, p := range ps {
		p.conn.CloseWith("kicked")
	}
	return len(ps) > 0
}
