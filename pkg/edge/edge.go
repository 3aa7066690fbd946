// Package edge pulls paths on demand from another SRT server, an origin or
// another edge. The first viewer of a path that has a source and no
// publisher starts one pull, which reads the source as streamid read:PATH
// and hands the connection to the same ingest pipeline a pushed stream
// takes (demux, RTP payloads, audio, hub, stats, metrics), so the edge
// serves it like any publisher. The viewer's request waits until the
// stream's first IDR is in the hub. The pull reconnects with back-off when
// the source drops, while its viewers wait through the path's publisher
// grace, and ends a while after its last viewer left.
//
// The edge only ever asks the hub for a path's state, a few times a second
// per pull: it adds nothing to the media path.
package edge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/srtwhep/srtwhep/pkg/events"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/srt"
)

// Source is where a path is pulled from, as the config says at the time
// of a demand (a reload applies to the next pull).
type Source struct {
	Addr       string // HOST:PORT of the source's SRT listener; "" = no source
	User, Pass string // sent in the streamid (#!::r=PATH,m=request,u=…,s=…)
	Passphrase string
	Latency    time.Duration // 0 = Config.Latency
	// URL names the source in logs and events, without credentials.
	URL string
	// Timeout is how long a demand waits for the first IDR.
	Timeout time.Duration
	// Linger keeps the pull this long after its last reader left.
	Linger time.Duration
}

// Config configures a Puller. Hub, Serve and Source are required.
type Config struct {
	Hub *hub.Hub
	// Serve runs a pulled connection until it ends: ingest.Manager.Serve,
	// the same function the SRT listener hands publishers to.
	Serve func(ctx context.Context, c *srt.Conn) error
	// Source returns a path's source; Addr "" means the path has none.
	Source func(path string) Source
	// Latency, PBKeyLen and ReadTimeout are the SRT settings of every pull
	// (srt.latency, srt.pbKeyLen, srt.readTimeout).
	Latency     time.Duration
	PBKeyLen    int
	ReadTimeout time.Duration
	// MaxPulls bounds the pulls running at once (0: DefaultMaxPulls); a
	// demand past it gets a *TooManyPullsError.
	MaxPulls int
	// Events receives SourceUp and SourceDown (nil: none).
	Events events.Func
	Logger *slog.Logger
}

// Back-off between attempts: from minBackoff, doubling after each failure
// up to maxBackoff, and back to minBackoff once a connection delivered a
// picture. A demand may ask for an attempt sooner, but never sooner than
// minBackoff after the previous one, so viewers hammering a dead source
// cannot make the edge hammer it.
const (
	minBackoff = time.Second
	maxBackoff = 30 * time.Second
)

// How often a pull asks the hub: often while a demand waits for the first
// IDR (it adds to the first viewer's start time), seldom otherwise (reader
// counts for the linger).
const (
	readyPoll = 20 * time.Millisecond
	idlePoll  = 250 * time.Millisecond
)

// demandHold counts a demand as a reader for this long: the request adds
// its reader just after the demand returns, so a pull with sourceLinger 0
// must not end in between.
const demandHold = 2 * time.Second

// Puller owns every pull. Create it with New, run it with Run.
type Puller struct {
	cfg Config
	log *slog.Logger

	started chan struct{} // closed when Run has begun

	// dial opens a link to a source (dialSRT) and sleep waits out a
	// back-off ((*pull).sleep): the two places a pull meets libsrt and the
	// clock. Tests replace them to run pulls from memory, without back-off
	// waits.
	dial  func(ctx context.Context, cfg srt.DialConfig) (link, error)
	sleep func(pl *pull, ctx context.Context, d time.Duration) bool

	mu      sync.Mutex
	base    context.Context // Run's; nil before Run
	stopped bool            // Run is ending: no new pull
	pulls   map[string]*pull
	wg      sync.WaitGroup

	// refused answers demands for paths the source just refused as not
	// found; rlog keeps refusals of many paths to a line a second.
	refused refusedCache
	rlog    reasonLog
}

// New checks cfg; it starts nothing.
func New(cfg Config) (*Puller, error) {
	switch {
	case cfg.Hub == nil:
		return nil, errors.New("edge: Config.Hub is nil")
	case cfg.Serve == nil:
		return nil, errors.New("edge: Config.Serve is nil; pass the ingest manager's Serve")
	case cfg.Source == nil:
		return nil, errors.New("edge: Config.Source is nil")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxPulls <= 0 {
		cfg.MaxPulls = DefaultMaxPulls
	}
	p := &Puller{cfg: cfg, log: log.With("component", "edge"), started: make(chan struct{}), pulls: map[string]*pull{},
		sleep: (*pull).sleep, rlog: reasonLog{every: reasonEvery}}
	p.dial = p.dialSRT
	return p, nil
}

// link is one connection to a source as a pull uses it: an *srt.Conn
// served by Config.Serve (srtLink), or one from memory in the tests.
type link interface {
	Remote() string
	CloseWith(reason string)
	Close() error
	// Serve runs the connection through the ingest pipeline until it ends.
	Serve(ctx context.Context) error
}

type srtLink struct {
	*srt.Conn
	serve func(ctx context.Context, c *srt.Conn) error
}

func (l srtLink) Serve(ctx context.Context) error { return l.serve(ctx, l.Conn) }

func (p *Puller) dialSRT(ctx context.Context, cfg srt.DialConfig) (link, error) {
	c, err := srt.Dial(ctx, cfg)
	if err != nil {
		return nil, err // a nil link, not a link holding a nil *srt.Conn
	}
	return srtLink{Conn: c, serve: p.cfg.Serve}, nil
}

// Run lets demands start pulls until ctx ends, then closes every pull and
// returns once their goroutines have.
func (p *Puller) Run(ctx context.Context) error {
	p.mu.Lock()
	if p.base != nil {
		p.mu.Unlock()
		return errors.New("edge: Run called twice")
	}
	p.base = ctx
	p.mu.Unlock()
	close(p.started)
	<-ctx.Done()
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// errEnded: the pull a demand waited on ended without a picture for a
// reason that is no error of the source (a publisher took the path, or
// the pull lingered out just as the demand came); the demand looks again.
var errEnded = errors.New("pull ended")

// errStopping refuses demands while the server shuts down.
var errStopping = errors.New("edge: the server is shutting down")

// Demand makes sure path can be read: when it has a source and no
// publisher, it starts a pull (or joins the running one) and returns once
// the stream's first IDR is in the hub. It returns nil at once for a path
// without a source or with a publisher of its own, leaving the answer to
// the hub. Otherwise the error is an *Error: Timeout() when the source
// gave no picture within its Timeout, wrapping hub.ErrNoPublisher when the
// source refused the stream.
func (p *Puller) Demand(ctx context.Context, path string) error {
	src := p.cfg.Source(path)
	if src.Addr == "" {
		return nil
	}
	// Only Run's goroutine may own pulls; it starts with the server.
	select {
	case <-p.started:
	case <-ctx.Done():
		return ctx.Err()
	}
	for range 3 {
		// Checked each round: the pull a demand waited on may have ended
		// on the refusal that put the path here.
		if e := p.refused.get(path, time.Now()); e != nil {
			return e
		}
		pl, err := p.pull(path, src)
		if pl == nil || err != nil {
			return err
		}
		if err := pl.wait(ctx, src.Timeout); !errors.Is(err, errEnded) {
			return err
		}
	}
	return nil // the hub will say what there is
}

// pull returns the path's running pull, starting one when the path has no
// publisher; nil when it has one that is not a pull.
func (p *Puller) pull(path string, src Source) (*pull, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pl := p.pulls[path]; pl != nil {
		return pl, nil
	}
	if p.cfg.Hub.State(path).Publisher {
		return nil, nil
	}
	if p.stopped {
		return nil, errStopping
	}
	if len(p.pulls) >= p.cfg.MaxPulls {
		p.rlog.warn(p.log, "max pulls", "edge pull refused: too many pulls running (raise srt.maxPulls if this edge can carry more)",
			path, "limit", p.cfg.MaxPulls)
		return nil, &TooManyPullsError{Path: path, Limit: p.cfg.MaxPulls}
	}
	ctx, cancel := context.WithCancel(p.base)
	pl := &pull{
		p:       p,
		path:    path,
		src:     src,
		log:     p.log.With("path", path, "source", src.URL),
		kick:    make(chan struct{}, 1),
		changed: make(chan struct{}),
	}
	p.pulls[path] = pl
	p.wg.Go(func() {
		defer cancel()
		pl.run(ctx)
		p.mu.Lock()
		if p.pulls[path] == pl {
			delete(p.pulls, path)
		}
		p.mu.Unlock()
		pl.update(func() { pl.done = true })
	})
	return pl, nil
}

// Error is why a demand got no stream from the path's source.
type Error struct {
	Path   string
	Source string // the source URL without credentials
	Err    error  // the last attempt's error; nil when it is still going
	// After is how long the demand waited, for timeouts.
	After   time.Duration
	timeout bool
	state   string // what the pull was doing at a timeout without an error
}

func (e *Error) Error() string {
	switch {
	case !e.timeout:
		return fmt.Sprintf("origin %s: %s", e.Source, describe(e.Err))
	case e.Err == nil && e.state != "":
		return fmt.Sprintf("origin %s sent no picture within %s: %s", e.Source, e.After, e.state)
	case e.Err == nil:
		return fmt.Sprintf("origin %s sent no picture within %s", e.Source, e.After)
	default:
		return fmt.Sprintf("origin %s sent no picture within %s: %s", e.Source, e.After, describe(e.Err))
	}
}

// Unwrap lets errors.Is see the cause and, for a refusal, that the path
// has no stream (hub.ErrNoPublisher).
func (e *Error) Unwrap() []error {
	errs := []error{}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	if !e.timeout {
		errs = append(errs, hub.ErrNoPublisher)
	}
	return errs
}

// Timeout reports a source that gave no picture in time (or none yet
// because the server is starting): the request may be retried.
func (e *Error) Timeout() bool { return e.timeout }

// describe is an attempt's error in the words of an edge: the source's
// refusal reason rather than libsrt's phrasing.
func describe(err error) string {
	var de *srt.DialError
	if errors.As(err, &de) {
		return de.Describe()
	}
	if errors.Is(err, srt.ErrReadTimeout) {
		return "connected, but the source sent no data"
	}
	return err.Error()
}

// hint tells the operator what to do about a failed attempt.
func hint(err error, src Source) string {
	var de *srt.DialError
	if !errors.As(err, &de) {
		if errors.Is(err, errNoPicture) || errors.Is(err, srt.ErrReadTimeout) {
			return "the source accepted the connection but sent no stream; check its publisher"
		}
		return ""
	}
	_, port, _ := net.SplitHostPort(src.Addr)
	switch {
	case de.Timeout():
		return fmt.Sprintf("check that the source server runs, that UDP port %s on it is reachable from here (firewall, published port), and the source URL", port)
	case de.Reason == 1404:
		return "the source has no stream on this path: start its publisher, or check the path name"
	case de.Reason == 1401 || de.Reason == 1403:
		return "put the credentials the source wants into the source URL: srt://NAME:TOKEN@HOST:PORT (a srtwhep source checks TOKEN against the path's readTokens)"
	case de.Reason == 10 || de.Reason == 11:
		return "set ?passphrase= in the source URL to the source's passphrase for this path (or remove it)"
	case de.Reason == 1405:
		return "the source does not serve reading over SRT: it must be a srtwhep server, or one that serves streamid read:PATH"
	case !de.Rejected():
		return "check the source URL's host name"
	}
	return ""
}

// Pullable reports whether path has a source, so an SRT reader of a path
// without a publisher is let through the handshake to demand it.
func (p *Puller) Pullable(path string) bool { return p.cfg.Source(path).Addr != "" }
