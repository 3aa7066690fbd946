package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/srtwhep/srtwhep/pkg/ctlclient"
	"github.com/srtwhep/srtwhep/pkg/version"
)

// The wire contract: each event is POSTed on its own, as one JSON object
// with Content-Type application/json:
//
//	{"event":"reader.closed","time":"2026-01-02T15:04:05.123Z","path":"live/cam1",
//	 "protocol":"webrtc","id":"9f2c…","remote":"203.0.113.7:51234",
//	 "reason":"deleted by the client","seq":42}
//
// One object per request rather than batches: every receiver (a small web
// app, a serverless function) handles it without a loop, a failed request
// concerns exactly one event, and the rate is one event per session start
// or end, never per packet, which one kept-alive connection carries with
// room to spare; a burst (a publisher leaving with its viewers) waits in
// the queue. seq counts every event the server produced since it started,
// dropped ones included, so a gap tells the receiver that events were lost
// and a repeat that a retried event had arrived after all (its answer was
// late or lost).
// Events are posted one at a time, in seq order. A 2xx answer is success;
// the body of the answer is ignored.

// Defaults for the zero values of PosterConfig.
const (
	DefaultQueueSize = 1024
	DefaultTimeout   = 2 * time.Second
	DefaultRetries   = 2
	DefaultBackoff   = 250 * time.Millisecond
)

const (
	// maxBackoff caps the doubling wait between attempts.
	maxBackoff = 5 * time.Second
	// maxAnswerBody is read from an answer so its connection can be
	// reused; the body means nothing.
	maxAnswerBody = 4 << 10
	// logEvery is the most often the poster says that events were dropped
	// or failed: a dead receiver must not flood the log.
	logEvery = time.Second
)

// PosterConfig configures a Poster. URL is required.
type PosterConfig struct {
	// URL receives the events (http or https).
	URL string
	// QueueSize bounds the events waiting to be posted; when the receiver
	// falls that far behind, new events are dropped and counted. Default
	// DefaultQueueSize.
	QueueSize int
	// Timeout bounds one POST, and the final flush at shutdown. Default
	// DefaultTimeout.
	Timeout time.Duration
	// Retries is how many more times a failed POST is tried: 0 takes
	// DefaultRetries, a negative value tries once. Only failures a retry
	// can cure are retried: no answer, 5xx, 408 and 429.
	Retries int
	// Backoff is the wait before the first retry, doubled for each next
	// one (up to 5 s). Default DefaultBackoff.
	Backoff    time.Duration
	Logger     *slog.Logger
	HTTPClient *http.Client // nil: a client of its own that uses no proxy
}

// Poster posts events to a control plane's URL. Emit queues an event and
// returns at once, whatever the receiver does; Run is the one goroutine
// that sends them.
type Poster struct {
	cfg       PosterConfig
	log       *slog.Logger
	client    *http.Client
	ownClient bool
	userAgent string

	// mu makes the sequence number and the queue order one order, and
	// decides, with stopped, which events Run will still see.
	mu      sync.Mutex
	seq     uint64
	queue   chan posted
	stopped bool // Run is flushing or has ended: Emit drops

	ran atomic.Bool

	sent, dropped, failed atomic.Uint64
	// lastErr is why the latest event failed, nil after a success; it
	// explains drops while the receiver is failing.
	lastErr atomic.Pointer[string]

	drops throttle // logged from Emit's callers and from Run
	fails throttle // logged from Run only
	// lastFail describes the latest failed event; only Run touches it.
	lastFail failure
}

// posted is the JSON body of one POST.
type posted struct {
	Event
	Seq uint64 `json:"seq"`
}

type failure struct {
	ev       posted
	attempts int
	err      error
}

// NewPoster checks cfg and returns a Poster; it starts nothing.
func NewPoster(cfg PosterConfig) (*Poster, error) {
	u, err := url.Parse(cfg.URL)
	switch {
	case err != nil:
		return nil, fmt.Errorf("events: URL %q: %w", cfg.URL, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("events: URL %q: scheme %q is not http or https", u.Redacted(), u.Scheme)
	case u.Host == "":
		return nil, fmt.Errorf("events: URL %q has no host", u.Redacted())
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	switch {
	case cfg.Retries == 0:
		cfg.Retries = DefaultRetries
	case cfg.Retries < 0:
		cfg.Retries = 0
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Poster{
		cfg:       cfg,
		log:       log.With("url", u.Redacted()),
		client:    cfg.HTTPClient,
		userAgent: "srtwhep/" + version.String(),
		queue:     make(chan posted, cfg.QueueSize),
	}
	if p.client == nil {
		p.ownClient = true
		// One sender, so one connection; Timeout is applied per attempt.
		p.client, _ = ctlclient.New(1, 0)
	}
	return p, nil
}

// Func returns p.Emit as the Func producers take, or nil for a nil
// Poster (no hooks configured).
func (p *Poster) Func() Func {
	if p == nil {
		return nil
	}
	return p.Emit
}

// Emit queues e and returns at once. When the queue is full, or Run has
// ended, e is dropped and counted, and at most one line a second says how
// many were dropped and why. A zero Time is set to now.
func (p *Poster) Emit(e Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	p.mu.Lock()
	p.seq++
	queued := false
	if !p.stopped {
		select {
		case p.queue <- posted{Event: e, Seq: p.seq}:
			queued = true
		default:
		}
	}
	stopped := p.stopped
	p.mu.Unlock()
	if queued {
		return
	}
	p.dropped.Add(1)
	p.drops.add(1)
	p.reportDrops(stopped)
}

// Run sends the queued events, one at a time and in order, until ctx
// ends. Then it lets the POST in flight finish (it is bounded by Timeout,
// and cutting it would make the receiver see the event twice), stops
// taking events (Emit drops from then on) and spends at most Timeout more
// sending what is still queued, once each; what is left after that is
// dropped. So it returns within twice Timeout of ctx's end, with nil.
func (p *Poster) Run(ctx context.Context) error {
	if !p.ran.CompareAndSwap(false, true) {
		return errors.New("events: Run called twice; a Poster runs once")
	}
	if p.ownClient {
		// Idle keep-alive connections hold goroutines of the transport.
		defer p.client.CloseIdleConnections()
	}
	tick := time.NewTicker(logEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			p.flush(nil)
			return nil
		case ev := <-p.queue:
			if !p.deliver(ctx, ev) {
				p.flush(&ev)
				return nil
			}
		case <-tick.C:
			// Summaries of drops and failures that stopped coming.
			p.reportDrops(false)
			p.reportFailures()
		}
	}
}

// deliver posts ev with retries. It returns false when ctx ended while
// it waited to retry: ev is then the first one the flush sends.
func (p *Poster) deliver(ctx context.Context, ev posted) bool {
	body, err := json.Marshal(ev)
	if err != nil {
		// Only a Time outside years 0 to 9999 gets here.
		p.fail(ev, 0, fmt.Errorf("encoding the event: %w", err))
		return true
	}
	wait := p.cfg.Backoff
	for attempt := 1; ; attempt++ {
		retry, err := p.post(context.WithoutCancel(ctx), body)
		switch {
		case err == nil:
			p.succeed()
			return true
		case !retry || attempt > p.cfg.Retries || ctx.Err() != nil:
			p.fail(ev, attempt, err)
			return true
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
		wait = min(2*wait, maxBackoff)
	}
}

// flush sends what is left, once each, within one Timeout; first is an
// event taken from the queue that was waiting to be retried.
func (p *Poster) flush(first *posted) {
	// Drops held back so far were for a full queue; say so before the
	// ones of a stopped sender begin.
	p.drops.last.Store(0)
	p.reportDrops(false)
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	// No event enters the queue from here on, so draining it ends.
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Timeout)
	defer cancel()
	next := func() (posted, bool) {
		if first != nil {
			ev := *first
			first = nil
			return ev, true
		}
		select {
		case ev := <-p.queue:
			return ev, true
		default:
			return posted{}, false
		}
	}
	late := 0
	for ev, ok := next(); ok; ev, ok = next() {
		if ctx.Err() != nil {
			late++
			continue
		}
		body, err := json.Marshal(ev)
		if err == nil {
			_, err = p.post(ctx, body)
		}
		if err != nil {
			p.fail(ev, 1, err)
			continue
		}
		p.succeed()
	}
	if late > 0 {
		p.dropped.Add(uint64(late))
		p.log.Warn(fmt.Sprintf("hook receiver: %d events not sent before the shutdown deadline", late),
			"timeout", p.cfg.Timeout.String())
	}
	// The last summaries go out whatever the age of the lines before.
	p.fails.last.Store(0)
	p.reportFailures()
	p.drops.last.Store(0)
	p.reportDrops(true)
}
