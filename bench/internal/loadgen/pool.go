package loadgen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// Config describes the sessions a Pool opens.
type Config struct {
	URL         string // WHEP endpoint, e.g. http://127.0.0.1:8889/live/bench/whep
	BearerToken string

	// DecodeEvery makes every k-th session (the first one included) run
	// in full decode mode; 0 means 10. Use 1 to decode every session.
	DecodeEvery int

	// MaxDecode caps the decode sessions (0: no cap, negative: none). A
	// decoding session costs the generator several times what a server
	// viewer costs the server, so a ladder into the hundreds keeps a fixed
	// sample.
	MaxDecode int

	// ConnectTimeout bounds one session's offer, ICE and DTLS; 0 means 15 s.
	ConnectTimeout time.Duration

	// Pace is the receive loop's sleep between rounds; 0 means
	// DefaultPace, negative means none (lowest latency, highest cost).
	Pace time.Duration

	// Audio offers a recvonly Opus m-section besides the video, as a
	// browser does; the server then sends audio when the path has it.
	Audio bool

	// NACK offers generic NACK (and, in decode sessions, sends NACKs on
	// loss) as browsers do, so the server keeps its retransmission state
	// per viewer. PLI is always offered.
	NACK bool

	// GRO turns UDP_GRO on for the light receivers: the kernel then hands
	// a socket a sender's GSO run as one message. Browsers do not do this,
	// and on loopback it also spares the server splitting its GSO sends,
	// so it lowers the server's measured cost; off for headline figures.
	GRO bool

	// ReceiverReports makes every viewer send what a browser sends: an
	// RTCP receiver report (with its SDES CNAME) once a second, NACKs for
	// missing video packets and a PLI after a hole NACKs cannot repair.
	// Decoding sessions leave it to pion's interceptors, light sessions
	// build it from their socket counts (feedback.go).
	ReceiverReports bool

	// Mode names the setup above for reports; ApplyMode sets it.
	Mode ViewerMode

	// SocketBuffer is each viewer socket's receive buffer in bytes once
	// connected; 0 keeps 2 MiB, which holds a keyframe between receive
	// rounds. A few kilobytes make a viewer whose "link" loses most of
	// every frame.
	SocketBuffer int

	// Pin is a layer selection (WHEP layer extension, e.g.
	// {"maxHeight":360}) that every PinEvery-th session (0: every one)
	// POSTs to its session's layer Link once connected; "" pins none. A
	// refused selection fails the session with the server's answer. A ladder with
	// half its viewers on a lower rendition measures what the renditions
	// cost per viewer.
	Pin      string
	PinEvery int

	Logger *slog.Logger // nil discards
}

func (c *Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

func (c *Config) decodeEvery() int {
	if c.DecodeEvery <= 0 {
		return 10
	}
	return c.DecodeEvery
}

func (c *Config) connectTimeout() time.Duration {
	if c.ConnectTimeout <= 0 {
		return 15 * time.Second
	}
	return c.ConnectTimeout
}

// Pool owns the sessions of one load-generator run.
type Pool struct {
	cfg     Config
	local   netip.Addr
	httpc   *http.Client
	reactor *reactor

	mu       sync.Mutex
	sessions []*Session
	nextID   int
	decoders int            // decode sessions opened
	failures map[string]int // error text → count, for the summary
	lost     int            // sessions that ended on their own
	retries  int            // offers repeated after a 503 or 429 with Retry-After
}

// NewPool checks the URL and picks the local address the server is reached
// from, which every session's socket binds to.
func NewPool(cfg Config) (*Pool, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("loadgen: WHEP URL %q must be http(s)://HOST:PORT/PATH/whep", cfg.URL)
	}
	local, err := localAddrFor(u.Hostname())
	if err != nil {
		return nil, err
	}
	pace := cfg.Pace
	if pace == 0 {
		pace = DefaultPace
	}
	r, err := newReactor(max(pace, 0), cfg.GRO, cfg.SocketBuffer)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
	}
	return &Pool{
		cfg:      cfg,
		local:    local,
		reactor:  r,
		httpc:    &http.Client{Timeout: 10 * time.Second, Transport: tr},
		failures: map[string]int{},
	}, nil
}

// localAddrFor asks the routing table which local address reaches host; a
// UDP "connect" sends nothing.
func localAddrFor(host string) (netip.Addr, error) {
	c, err := net.Dial("udp", net.JoinHostPort(host, "9"))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("loadgen: no route to %s: %w", host, err)
	}
	defer c.Close()
	ap := c.LocalAddr().(*net.UDPAddr).AddrPort()
	return ap.Addr().Unmap(), nil
}

// Grow opens sessions, rate per second, until target sessions are alive.
// Sessions that ended since the last call are closed and replaced. It
// returns how many were opened and how many failed; failures are also
// kept for Failures.
func (p *Pool) Grow(ctx context.Context, target int, rate float64) (added, failed int) {
	p.prune()
	need := target - p.Len()
	if need <= 0 {
		return 0, 0
	}
	if rate <= 0 {
		rate = 20
	}
	interval := time.Duration(float64(time.Second) / rate)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()

	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := 0; i < need; i++ {
		if i > 0 {
			select {
			case <-ticker.C:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		p.mu.Lock()
		id := p.nextID
		p.nextID++
		decode := id%p.cfg.decodeEvery() == 0 && (p.cfg.MaxDecode == 0 || p.decoders < p.cfg.MaxDecode)
		if decode {
			p.decoders++
		}
		p.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			dctx, cancel := context.WithTimeout(ctx, p.cfg.connectTimeout())
			defer cancel()
			s, err := p.dialRetrying(dctx, id, decode)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				p.recordFailure(err)
				p.cfg.logger().Warn("session failed to connect", "session", id, "err", err)
				return
			}
			added++
			p.mu.Lock()
			p.sessions = append(p.sessions, s)
			p.mu.Unlock()
		}()
	}
	wg.Wait()
	p.mu.Lock()
	sort.Slice(p.sessions, func(i, j int) bool { return p.sessions[i].ID < p.sessions[j].ID })
	p.mu.Unlock()
	return added, failed
}

// dialRetrying opens a session, repeating the offer while the server
// answers 503 with Retry-After (its handshake limit under a ramp) or 429
// (its per-address offer rate, http.offerRate: a load generator is one
// address), as a player does, until ctx ends. The retries are counted: a ladder must show
// them, not hide them.
func (p *Pool) dialRetrying(ctx context.Context, id int, decode bool) (*Session, error) {
	for {
		s, err := dialSession(ctx, id, decode, p.local, p.reactor, &p.cfg, p.httpc)
		wait, again := retryAfter(err)
		if !again {
			return s, err
		}
		p.mu.Lock()
		p.retries++
		p.mu.Unlock()
		if !waitCtx(ctx, wait) {
			return nil, err
		}
	}
}

// retryAfter tells whether err is a 503 or 429 the server asks to retry,
// and when. Waits are capped so a ramp keeps its pace, and spread so the
// refused sessions do not all come back at once.
func retryAfter(err error) (time.Duration, bool) {
	var he *whepclient.HTTPError
	if !errors.As(err, &he) || he.RetryAfter == "" ||
		(he.StatusCode != http.StatusServiceUnavailable && he.StatusCode != http.StatusTooManyRequests) {
		return 0, false
	}
	secs, perr := strconv.Atoi(he.RetryAfter)
	if perr != nil || secs < 0 {
		return 0, false
	}
	return min(time.Duration(secs)*time.Second, 2*time.Second) + time.Duration(rand.IntN(250))*time.Millisecond, true
}

func (p *Pool) recordFailure(err error) {
	msg := err.Error()
	var he *whepclient.HTTPError
	if errors.As(err, &he) {
		msg = fmt.Sprintf("HTTP %d", he.StatusCode)
	} else if len(msg) > 160 {
		msg = msg[:160]
	}
	p.mu.Lock()
	p.failures[msg]++
	p.mu.Unlock()
}

// prune closes sessions that ended on their own.
func (p *Pool) prune() {
	p.mu.Lock()
	var dead []*Session
	live := p.sessions[:0]
	for _, s := range p.sessions {
		if s.Alive() {
			live = append(live, s)
		} else {
			dead = append(dead, s)
		}
	}
	p.sessions = live
	p.lost += len(dead)
	p.mu.Unlock()
	for _, s := range dead {
		p.cfg.logger().Warn("session ended", "session", s.ID, "err", s.Err())
		_ = s.Close()
	}
}

// Len is the number of sessions held (alive or ended since the last Grow).
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sessions)
}

// Sessions returns the sessions in ID order.
func (p *Pool) Sessions() []*Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*Session(nil), p.sessions...)
}

// Retries is how many offers were repeated after a 503 with Retry-After.
func (p *Pool) Retries() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.retries
}

// Failures returns connection errors seen so far (text → count) and the
// number of sessions that ended by themselves.
func (p *Pool) Failures() (map[string]int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.failures))
	for k, v := range p.failures {
		out[k] = v
	}
	return out, p.lost
}

// WaitFlowing waits until every session has received video, and audio
// when the server answered audio, or until timeout. It reports how many
// still had nothing.
func (p *Pool) WaitFlowing(ctx context.Context, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		waiting := 0
		for _, s := range p.Sessions() {
			if s.Alive() && !s.flowing() {
				waiting++
			}
		}
		if waiting == 0 || time.Now().After(deadline) {
			return waiting
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return waiting
		}
	}
}

// Close ends every session, a few at a time so the server's DELETE
// handling is not flooded.
func (p *Pool) Close() error {
	p.mu.Lock()
	ss := p.sessions
	p.sessions = nil
	p.mu.Unlock()
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, s := range ss {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := s.Close(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("session %d: %w", s.ID, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	p.httpc.CloseIdleConnections()
	errs = append(errs, p.reactor.Close())
	return errors.Join(errs...)
}
