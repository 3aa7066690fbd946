package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/haivision/srtgo"

	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/config"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/srt"
)

// access is the server's access-control state. The rules themselves are
// read from the live config on every request, so a reload applies to the
// next publisher or viewer.
type access struct {
	hook atomic.Pointer[auth.Hook] // nil when authHook.url is empty
	// Failures are throttled per client address, separately for SRT
	// publishers and for HTTP (viewers and the control API), because the
	// two slow a client down differently: HTTP holds the answer, the SRT
	// handshake (on a libsrt thread that must not sleep) refuses early.
	publishThrottle *auth.Throttle
	httpThrottle    *auth.Throttle
}

func (s *server) initAccess(cfg *config.Config) {
	s.publishThrottle = auth.NewThrottle(auth.ThrottleConfig{})
	s.httpThrottle = auth.NewThrottle(auth.ThrottleConfig{})
	s.applyHook(cfg.AuthHook)
}

// applyHook builds a new hook client when the hook settings changed; the
// old one (and its cache) is dropped, since its answers may no longer hold.
func (s *server) applyHook(h config.AuthHook) {
	cur := s.hook.Load()
	want := auth.HookConfig{URL: h.URL, Timeout: time.Duration(h.Timeout), CacheTTL: time.Duration(h.CacheTTL)}
	if cur != nil && want.URL != "" {
		have := cur.Config()
		if have.URL == want.URL && have.Timeout == want.Timeout && have.CacheTTL == want.CacheTTL {
			return
		}
	}
	var next *auth.Hook
	if want.URL != "" {
		next = auth.NewHook(want)
	}
	if old := s.hook.Swap(next); old != nil {
		old.Close()
	}
}

func (s *server) closeAccess() {
	if h := s.hook.Swap(nil); h != nil {
		h.Close()
	}
}

// admitPublisher runs in the SRT listen callback on a libsrt thread: it
// checks the path's address list and credentials, asks the hook (an HTTP
// call bounded by authHook.timeout), then one hub flag.
func (s *server) admitPublisher(req srt.Request) error {
	cfg := s.config()
	path := req.StreamID.Path
	pc := cfg.PathConfig(path)
	ip := auth.AddrOf(req.Remote)
	key := auth.Key(ip)
	if d := s.publishThrottle.Remaining(key); d > 0 {
		return srt.RejectError{Reason: srtgo.RejectionReasonUnauthorized,
			Msg: fmt.Sprintf("too many failed attempts from this address; retry in %v with the right credentials", d.Round(time.Millisecond))}
	}
	if !auth.IPAllowed(pc.PublishIPs, ip) {
		return srt.RejectError{Reason: srtgo.RejectionReasonForbidden,
			Msg: fmt.Sprintf("address %s may not publish to this path; add it to publishIPs of the path", ip)}
	}
	if pc.PublishUser != "" || pc.PublishPass != "" {
		if !auth.CredentialsMatch(req.StreamID.User, req.StreamID.Pass, pc.PublishUser, pc.PublishPass) {
			s.publishThrottle.Fail(key)
			return srt.ErrUnauthorized
		}
	}
	if h := s.hook.Load(); h != nil {
		err := h.Check(context.Background(), auth.Request{Action: auth.ActionPublish, Path: path, IP: ip.String(),
			User: req.StreamID.User, Password: req.StreamID.Pass})
		if err != nil {
			s.publishThrottle.Fail(key)
			return srt.RejectError{Reason: srtgo.RejectionReasonUnauthorized, Msg: "refused by authHook: " + err.Error()}
		}
	}
	s.publishThrottle.Succeed(key)
	if s.hub.HasPublisher(path) {
		return hub.ErrPathBusy
	}
	return nil
}

// gateWHEP checks read access on WHEP offers (POST /PATH/whep) before the
// WHEP server spends anything on them; every other request passes through.
// Session URLs (PATCH, DELETE) carry an unguessable id and need no check.
func (s *server) gateWHEP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, ok := strings.CutSuffix(r.URL.Path, "/whep")
		if r.Method != http.MethodPost || !ok || len(path) <= 1 {
			next.ServeHTTP(w, r)
			return
		}
		path = path[1:]
		if !s.authorizeRead(w, r, path) {
			s.rejects.auth.Add(1)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		switch sw.code {
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
			s.rejects.badOffer.Add(1)
		}
	})
}

// authorizeRead answers 403 or 401 and returns false when the viewer may
// not watch path. A failed token is answered only after the throttle's
// penalty, which holds this request alone.
func (s *server) authorizeRead(w http.ResponseWriter, r *http.Request, path string) bool {
	cfg := s.config()
	pc := cfg.PathConfig(path)
	ip := auth.AddrOf(r.RemoteAddr)
	log := s.log.With("component", "auth", "path", path, "remote", r.RemoteAddr)
	refuse := func(code int, msg string) bool {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", cfg.HTTP.AllowOrigin)
		h.Set("Access-Control-Expose-Headers", "WWW-Authenticate")
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(code)
		fmt.Fprintln(w, msg)
		return false
	}
	if !auth.IPAllowed(pc.ReadIPs, ip) {
		log.Warn("viewer refused: address not in readIPs")
		return refuse(http.StatusForbidden, fmt.Sprintf("your address may not watch path %q", path))
	}
	tok := auth.BearerToken(r.Header)
	var why error
	if len(pc.ReadTokens) > 0 && !auth.TokenValid(pc.ReadTokens, tok) {
		why = errors.New("missing or unknown read token")
	}
	if h := s.hook.Load(); why == nil && h != nil {
		why = h.Check(r.Context(), auth.Request{Action: auth.ActionRead, Path: path, IP: ip.String(), Token: tok})
	}
	key := auth.Key(ip)
	if why == nil {
		s.httpThrottle.Succeed(key)
		return true
	}
	d := s.httpThrottle.Fail(key)
	log.Warn("viewer refused: unauthorized", "err", why, "delay", d)
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-r.Context().Done():
		t.Stop()
	}
	w.Header().Set("WWW-Authenticate", auth.Challenge(tok != ""))
	return refuse(http.StatusUnauthorized, fmt.Sprintf("a valid token is needed to watch path %q; send Authorization: Bearer TOKEN (the player page takes ?token=TOKEN)", path))
}

// statusWriter remembers the status the WHEP server answered with.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (sw *statusWriter) WriteHeader(code int) {
	if sw.code == 0 {
		sw.code = code
	}
	sw.ResponseWriter.WriteHeader(code)
}

func (sw *statusWriter) Unwrap() http.ResponseWriter { return sw.ResponseWriter }

// rejectCounters count refused WHEP offers by the reasons of
// metrics.RejectReasons.
type rejectCounters struct {
	readerCap, serverFull, noPublisher, badOffer, auth atomic.Uint64
}

func (rc *rejectCounters) hubError(err error) {
	switch {
	case errors.Is(err, hub.ErrPathFull):
		rc.readerCap.Add(1)
	case errors.Is(err, hub.ErrServerFull):
		rc.serverFull.Add(1)
	case errors.Is(err, hub.ErrNoPublisher), errors.Is(err, hub.ErrEnded):
		rc.noPublisher.Add(1)
	}
}

func (rc *rejectCounters) snapshot() map[string]uint64 {
	return map[string]uint64{
		"reader_cap":   rc.readerCap.Load(),
		"server_full":  rc.serverFull.Load(),
		"no_publisher": rc.noPublisher.Load(),
		"bad_offer":    rc.badOffer.Load(),
		"auth":         rc.auth.Load(),
	}
}
