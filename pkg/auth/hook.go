package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/srtwhep/srtwhep/pkg/ctlclient"
)

// Action is what a hook request asks permission for.
type Action string

// The actions srtwhep asks a hook about.
const (
	ActionPublish Action = "publish"
	ActionRead    Action = "read"
)

// Request is the JSON body POSTed to the hook. Password carries a
// publisher's streamid password; Token a viewer's Bearer token.
type Request struct {
	Action   Action `json:"action"`
	Path     string `json:"path"`
	IP       string `json:"ip"`
	User     string `json:"user"`
	Password string `json:"password"`
	Token    string `json:"token"`
}

// ErrDenied is wrapped by every refusal of Hook.Check: a non-2xx answer,
// a timeout or a failed request.
var ErrDenied = errors.New("denied by the auth hook")

// HookConfig configures a Hook.
type HookConfig struct {
	URL string
	// Timeout bounds one hook request; a slower hook denies. Default 2 s.
	Timeout time.Duration
	// CacheTTL is how long an answer is reused for the same request; 0
	// asks every time.
	CacheTTL time.Duration
	// MaxEntries bounds the cache; default 4096.
	MaxEntries int
}

const (
	defaultHookTimeout    = 2 * time.Second
	defaultHookMaxEntries = 4096
	// maxHookBody is read from the hook's answer so the connection can be
	// reused; the body itself means nothing.
	maxHookBody = 4 << 10
)

// Hook asks an external HTTP service whether a request may proceed and
// remembers its answers for CacheTTL. It starts no goroutines of its own;
// Close releases the idle connections of its HTTP client.
type Hook struct {
	cfg       HookConfig
	client    *http.Client
	transport *http.Transport

	mu    sync.Mutex
	cache map[[sha256.Size]byte]hookAnswer
	now   func() time.Time // replaced by tests
}

type hookAnswer struct {
	err     error // nil allows
	expires time.Time
}

// NewHook returns a hook client for cfg.URL.
func NewHook(cfg HookConfig) *Hook {
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultHookTimeout
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = defaultHookMaxEntries
	}
	client, tr := ctlclient.New(4, cfg.Timeout)
	return &Hook{
		cfg:       cfg,
		client:    client,
		transport: tr,
		cache:     map[[sha256.Size]byte]hookAnswer{},
		now:       time.Now,
	}
}

// Config returns the configuration the hook was built with (defaults
// filled in), so a reload can tell whether it needs a new one.
func (h *Hook) Config() HookConfig { return h.cfg }

// Check returns nil when the hook allows r, or an error wrapping ErrDenied
// that says why not. Answers (2xx or not) are cached; failures to get an
// answer (timeout, refused connection) are not, so a hook that recovers is
// asked again at once.
func (h *Hook) Check(ctx context.Context, r Request) error {
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("%w: encoding the request: %v", ErrDenied, err)
	}
	key := sha256.Sum256(body)
	if err, ok := h.cached(key); ok {
		return err
	}
	err = h.ask(ctx, body)
	var ans *answerError
	if err == nil || errors.As(err, &ans) {
		h.remember(key, err)
	}
	return err
}

// answerError is a refusal the hook actually answered, which may be cached.
type answerError struct{ status string }

func (e *answerError) Error() string { return "auth hook answered " + e.status }
func (e *answerError) Unwrap() error { return ErrDenied }

func (h *Hook) ask(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrDenied, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%w: no answer within %v; check that the hook is up or raise authHook.timeout", ErrDenied, h.cfg.Timeout)
		}
		return fmt.Errorf("%w: %v", ErrDenied, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxHookBody))
	resp.Body.Close()
	if ctlclient.Redirected(resp) {
		// A redirect is an answer like a 403: cached, and it refuses.
		return &answerError{status: fmt.Sprint(resp.StatusCode) + "; hooks must answer 2xx to allow, redirects are not followed"}
	}
	if resp.StatusCode/100 != 2 {
		return &answerError{status: resp.Status}
	}
	return nil
}

func (h *Hook) cached(key [sha256.Size]byte) (error, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a, ok := h.cache[key]
	if !ok {
		return nil, false
	}
	if !h.now().Before(a.expires) {
		delete(h.cache, key)
		return nil, false
	}
	return a.err, true
}

func (h *Hook) remember(key [sha256.Size]byte, err error) {
	if h.cfg.CacheTTL <= 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	if _, ok := h.cache[key]; !ok && len(h.cache) >= h.cfg.MaxEntries {
		for k, a := range h.cache {
			if !now.Before(a.expires) {
				delete(h.cache, k)
			}
		}
		// Still full of live answers: forget an arbitrary one; the cost is
		// one more hook request, never a wrong answer.
		for k := range h.cache {
			if len(h.cache) < h.cfg.MaxEntries {
				break
			}
			delete(h.cache, k)
		}
	}
	h.cache[key] = hookAnswer{err: err, expires: now.Add(h.cfg.CacheTTL)}
}

// CacheLen is the number of cached answers (tests, debugging).
func (h *Hook) CacheLen() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.cache)
}

// Close drops the client's idle connections; in-flight checks finish.
func (h *Hook) Close() { h.transport.CloseIdleConnections() }
