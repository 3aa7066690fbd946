package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hookServer is a real HTTP hook on 127.0.0.1 that allows the paths in
// allow, answers 403 otherwise, and holds requests for path "slow" until
// the test ends.
type hookServer struct {
	*httptest.Server
	calls atomic.Int64
	mu    sync.Mutex
	last  Request
}

func startHook(t *testing.T, allow ...string) *hookServer {
	t.Helper()
	hs := &hookServer{}
	release := make(chan struct{})
	hs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hs.calls.Add(1)
		var req Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		hs.mu.Lock()
		hs.last = req
		hs.mu.Unlock()
		if req.Path == "slow" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		for _, p := range allow {
			if req.Path == p {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		http.Error(w, "no", http.StatusForbidden)
	}))
	t.Cleanup(func() {
		close(release)
		hs.Close()
	})
	return hs
}

func newTestHook(t *testing.T, cfg HookConfig) (*Hook, *fakeClock) {
	t.Helper()
	h := NewHook(cfg)
	c := &fakeClock{t: time.Unix(1000, 0)}
	h.now = c.now
	t.Cleanup(h.Close)
	return h, c
}

func TestHookAllowsAndDenies(t *testing.T) {
	hs := startHook(t, "live/ok")
	h, _ := newTestHook(t, HookConfig{URL: hs.URL, Timeout: 2 * time.Second})
	ctx := context.Background()
	req := Request{Action: ActionPublish, Path: "live/ok", IP: "10.0.0.1", User: "cam", Password: "pw"}
	if err := h.Check(ctx, req); err != nil {
		t.Fatalf("allowed path denied: %v", err)
	}
	hs.mu.Lock()
	got := hs.last
	hs.mu.Unlock()
	if got != req {
		t.Errorf("hook received %+v, want %+v", got, req)
	}
	err := h.Check(ctx, Request{Action: ActionRead, Path: "live/no", Token: "t"})
	if !errors.Is(err, ErrDenied) {
		t.Fatalf("denied path: err = %v, want ErrDenied", err)
	}
	if want := "auth hook answered 403 Forbidden"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

// TestHookCache: an answer is reused for CacheTTL for the same request
// only, and asked again once it expires.
func TestHookCache(t *testing.T) {
	hs := startHook(t, "live/ok")
	h, clock := newTestHook(t, HookConfig{URL: hs.URL, CacheTTL: 10 * time.Second})
	ctx := context.Background()
	ok := Request{Action: ActionRead, Path: "live/ok", IP: "10.0.0.1", Token: "a"}
	no := Request{Action: ActionRead, Path: "live/no", IP: "10.0.0.1", Token: "a"}
	for range 3 {
		if err := h.Check(ctx, ok); err != nil {
			t.Fatal(err)
		}
		if err := h.Check(ctx, no); !errors.Is(err, ErrDenied) {
			t.Fatalf("err = %v, want denied", err)
		}
	}
	if n := hs.calls.Load(); n != 2 {
		t.Errorf("hook called %d times for 2 distinct requests, want 2 (cached)", n)
	}
	other := ok
	other.Token = "b"
	if err := h.Check(ctx, other); err != nil {
		t.Fatal(err)
	}
	if n := hs.calls.Load(); n != 3 {
		t.Errorf("a different token was answered from the cache (calls = %d)", n)
	}
	clock.add(11 * time.Second)
	if err := h.Check(ctx, ok); err != nil {
		t.Fatal(err)
	}
	if n := hs.calls.Load(); n != 4 {
		t.Errorf("expired answer reused (calls = %d, want 4)", n)
	}
}

// TestHookTimeoutDenies: a hook that does not answer within Timeout denies,
// and that failure is not cached.
func TestHookTimeoutDenies(t *testing.T) {
	hs := startHook(t, "slow")
	h, _ := newTestHook(t, HookConfig{URL: hs.URL, Timeout: 200 * time.Millisecond, CacheTTL: time.Minute})
	req := Request{Action: ActionPublish, Path: "slow"}
	for i := range 2 {
		err := h.Check(context.Background(), req)
		if !errors.Is(err, ErrDenied) {
			t.Fatalf("attempt %d: err = %v, want a denial", i, err)
		}
	}
	if n := hs.calls.Load(); n != 2 {
		t.Errorf("hook called %d times, want 2: a timeout must not be cached", n)
	}
	if h.CacheLen() != 0 {
		t.Errorf("timeout cached (%d entries)", h.CacheLen())
	}
}

// TestHookUnreachableDenies: connection refused is a denial, not a panic
// or an allow.
func TestHookUnreachableDenies(t *testing.T) {
	hs := startHook(t)
	url := hs.URL
	hs.Close()
	h, _ := newTestHook(t, HookConfig{URL: url, Timeout: time.Second})
	if err := h.Check(context.Background(), Request{Action: ActionRead, Path: "x"}); !errors.Is(err, ErrDenied) {
		t.Fatalf("err = %v, want a denial", err)
	}
}

func TestHookCacheBounded(t *testing.T) {
	hs := startHook(t, "p")
	h, _ := newTestHook(t, HookConfig{URL: hs.URL, CacheTTL: time.Minute, MaxEntries: 8})
	for i := range 40 {
		if err := h.Check(context.Background(), Request{Action: ActionRead, Path: "p", Token: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
		if n := h.CacheLen(); n > 8 {
			t.Fatalf("cache holds %d answers, bound is 8", n)
		}
	}
}

// TestHookRedirectRefused: a hook that redirects refuses, whatever the
// redirect's target would answer. Go's client would otherwise follow a
// 302 as a body-less GET, and any 2xx page there would allow everybody.
func TestHookRedirectRefused(t *testing.T) {
	var followed atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		followed.Add(1)
		w.WriteHeader(http.StatusOK)
	})
	for _, code := range []int{301, 302, 303, 307, 308} {
		mux.HandleFunc(fmt.Sprintf("/r%d", code), func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/ok", code)
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	if resp, err := http.Get(srv.URL + "/ok"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the redirect target does not allow on its own (%v, %v): the test would prove nothing", resp, err)
	}
	followed.Store(0)
	for _, code := range []int{301, 302, 303, 307, 308} {
		h, _ := newTestHook(t, HookConfig{URL: fmt.Sprintf("%s/r%d", srv.URL, code), CacheTTL: time.Minute})
		req := Request{Action: ActionRead, Path: "live/a", Token: "tok"}
		err := h.Check(context.Background(), req)
		if !errors.Is(err, ErrDenied) {
			t.Fatalf("%d: err = %v, want a denial", code, err)
		}
		want := fmt.Sprintf("auth hook answered %d; hooks must answer 2xx to allow, redirects are not followed", code)
		if err.Error() != want {
			t.Errorf("%d: err = %q, want %q", code, err, want)
		}
		// The refusal is an answer, so it is cached like a 403.
		if h.CacheLen() != 1 {
			t.Errorf("%d: %d cached answers, want 1", code, h.CacheLen())
		}
	}
	if n := followed.Load(); n != 0 {
		t.Errorf("the redirect target was requested %d times; redirects must not be followed", n)
	}
}
