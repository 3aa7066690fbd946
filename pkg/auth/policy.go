package auth

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"
)

// Reason classifies a refusal. The transports translate it, each in one
// table: srt into an SRT reject reason, whep and api into an HTTP status.
type Reason int

// The reasons a Policy refuses for.
const (
	// ReasonForbidden: the client's address is not on the allow list. No
	// credential can change that, so it is never throttled.
	ReasonForbidden Reason = iota + 1
	// ReasonUnauthorized: missing or wrong credentials or token.
	ReasonUnauthorized
	// ReasonThrottled: too many failures from this address lately; the
	// client may retry after Denied.RetryAfter.
	ReasonThrottled
	// ReasonHookDenied: the external hook said no, or did not answer in
	// time.
	ReasonHookDenied
)

func (r Reason) String() string {
	switch r {
	case ReasonForbidden:
		return "forbidden"
	case ReasonUnauthorized:
		return "unauthorized"
	case ReasonThrottled:
		return "throttled"
	case ReasonHookDenied:
		return "hook_denied"
	}
	return fmt.Sprintf("reason(%d)", int(r))
}

// Denied is every refusal a Policy returns. Msg is written for the client
// (it says how to fix the request); Err, when set, is the cause for the log.
type Denied struct {
	Reason Reason
	Msg    string
	// Delay is how long the answer should be held back: the failure
	// throttle's penalty, which slows guessing without holding a lock.
	Delay time.Duration
	// RetryAfter is set for ReasonThrottled.
	RetryAfter time.Duration
	// TokenPresented tells an HTTP transport which WWW-Authenticate
	// challenge to send (RFC 6750 §3.1).
	TokenPresented bool
	Err            error
}

func (d *Denied) Error() string {
	if d.Err != nil {
		return d.Msg + ": " + d.Err.Error()
	}
	return d.Msg
}

func (d *Denied) Unwrap() error { return d.Err }

// Wait holds the caller's answer for Delay, or until ctx ends (the
// client went away): the penalty holds this one request, nobody else's.
func (d *Denied) Wait(ctx context.Context) {
	if d.Delay <= 0 {
		return
	}
	t := time.NewTimer(d.Delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// AsDenied returns the Denied in err's chain, or nil.
func AsDenied(err error) *Denied {
	var d *Denied
	if errors.As(err, &d) {
		return d
	}
	return nil
}

// PathRules are the access rules of one path, as the live config says.
type PathRules struct {
	PublishIPs  []string
	PublishUser string
	PublishPass string
	ReadIPs     []string
	ReadTokens  []string
}

// Rules are the rules a Policy applies. They are replaced as a whole on a
// config reload, so one request never sees half of an old and half of a new
// rule set.
type Rules struct {
	// ForPath returns the rules of a path; it must be cheap and local (it
	// runs on libsrt's handshake thread).
	ForPath func(path string) PathRules
	// APIToken opens the control API to clients that send it; "" keeps the
	// API to loopback clients.
	APIToken string
	// Hook is the external decision service; a zero URL disables it.
	Hook HookConfig
}

// Policy is the one place that decides publish, read and control-API
// access. It returns nil or a *Denied and never blocks on the network except
// in the methods whose doc says they ask the hook, which take a context.
type Policy struct {
	rules atomic.Pointer[Rules]
	hook  atomic.Pointer[Hook] // nil when Rules.Hook.URL is empty
	// Failures are throttled per client address, separately for SRT
	// publishers and for HTTP (viewers and the control API): HTTP holds
	// the answer back, while the SRT handshake must refuse at once.
	publish *Throttle
	http    *Throttle
}

// NewPolicy returns a Policy applying rules, slowing repeated failures as
// throttle says (the zero value takes the throttle's defaults). Close
// releases the hook's connections.
func NewPolicy(rules Rules, throttle ThrottleConfig) *Policy {
	p := &Policy{
		publish: NewThrottle(throttle),
		http:    NewThrottle(throttle),
	}
	p.SetRules(rules)
	return p
}

// SetRules applies new rules to the next request. The hook client (and its
// answer cache, which may no longer hold) is replaced only when its
// settings changed.
func (p *Policy) SetRules(rules Rules) {
	if rules.ForPath == nil {
		rules.ForPath = func(string) PathRules { return PathRules{} }
	}
	p.rules.Store(&rules)
	cur := p.hook.Load()
	if cur != nil && rules.Hook.URL != "" && sameHook(cur.Config(), rules.Hook) {
		return
	}
	var next *Hook
	if rules.Hook.URL != "" {
		next = NewHook(rules.Hook)
	}
	if old := p.hook.Swap(next); old != nil {
		old.Close()
	}
}

// Close drops the hook client.
func (p *Policy) Close() {
	if h := p.hook.Swap(nil); h != nil {
		h.Close()
	}
}

// HasHook reports whether publishers and viewers are also asked of a hook.
func (p *Policy) HasHook() bool { return p.hook.Load() != nil }

// Publisher is what a publisher presents.
type Publisher struct {
	Path   string
	Remote string // ip:port
	User   string
	Pass   string
}

// CheckPublisher applies the local publish rules: failure throttle, the
// path's address list and its static credentials. It is O(1), never blocks
// and takes no lock beyond the throttle's, so it may run on libsrt's
// handshake thread. The hook is asked separately (AskHookPublisher).
func (p *Policy) CheckPublisher(pub Publisher) error {
	ip := AddrOf(pub.Remote)
	key := Key(ip)
	if d := p.publish.Remaining(key); d > 0 {
		return &Denied{Reason: ReasonThrottled, RetryAfter: d,
			Msg: fmt.Sprintf("too many failed attempts from this address; retry in %v with the right credentials", d.Round(time.Millisecond))}
	}
	rules := p.rules.Load().ForPath(pub.Path)
	if !IPAllowed(rules.PublishIPs, ip) {
		return &Denied{Reason: ReasonForbidden,
			Msg: fmt.Sprintf("address %s may not publish to this path; add it to publishIPs of the path", ip)}
	}
	if rules.PublishUser != "" || rules.PublishPass != "" {
		if !CredentialsMatch(pub.User, pub.Pass, rules.PublishUser, rules.PublishPass) {
			p.publish.Fail(key)
			return &Denied{Reason: ReasonUnauthorized,
				Msg: "wrong or missing publish credentials; use streamid publish:PATH:USER:PASS or #!::r=PATH,m=publish,u=USER,s=PASS"}
		}
		if !p.HasHook() {
			p.publish.Succeed(key)
		}
	}
	return nil
}

// AskHookPublisher asks the hook, if any, whether pub may publish. It may
// take the hook's whole timeout, so it belongs on the publisher's own
// goroutine, never on a libsrt thread.
func (p *Policy) AskHookPublisher(ctx context.Context, pub Publisher) error {
	h := p.hook.Load()
	if h == nil {
		return nil
	}
	ip := AddrOf(pub.Remote)
	return p.askSRTHook(ctx, h, ip, Request{Action: ActionPublish, Path: pub.Path, IP: ip.String(), User: pub.User, Password: pub.Pass})
}

// askSRTHook puts the hook's answer for an SRT client into the SRT
// throttle: a refusal there counts as a failed attempt from ip like any
// local refusal, and a yes clears the address's record.
func (p *Policy) askSRTHook(ctx context.Context, h *Hook, ip netip.Addr, req Request) error {
	key := Key(ip)
	if err := h.Check(ctx, req); err != nil {
		p.publish.Fail(key)
		return &Denied{Reason: ReasonHookDenied, Msg: "refused by authHook", Err: err}
	}
	p.publish.Succeed(key)
	return nil
}

// ViewerAuthRequired reports whether watching path takes a read token or
// the hook's consent; an address list alone is not a credential.
func (p *Policy) ViewerAuthRequired(path string) bool {
	return len(p.rules.Load().ForPath(path).ReadTokens) > 0 || p.HasHook()
}

// Viewer is what a WHEP viewer presents.
type Viewer struct {
	Path   string
	Remote string // ip:port
	Token  string // Bearer token, "" when none
}

// CheckViewer decides whether v may watch: the path's address list, its
// read tokens, then the hook (which may take its timeout; ctx bounds it).
// A credential failure carries the throttle's penalty in Denied.Delay.
func (p *Policy) CheckViewer(ctx context.Context, v Viewer) error {
	ip := AddrOf(v.Remote)
	rules := p.rules.Load().ForPath(v.Path)
	if !IPAllowed(rules.ReadIPs, ip) {
		return &Denied{Reason: ReasonForbidden, Msg: fmt.Sprintf("your address may not watch path %q", v.Path)}
	}
	h := p.hook.Load()
	if len(rules.ReadTokens) == 0 && h == nil {
		// Nothing to guess here, and nothing that proves the client
		// knows a token: its failures elsewhere stay on record.
		return nil
	}
	key := Key(ip)
	if d := p.http.Locked(key); d > 0 {
		return lockedOut(d)
	}
	var cause error
	reason := ReasonUnauthorized
	if len(rules.ReadTokens) > 0 && !TokenValid(rules.ReadTokens, v.Token) {
		cause = errors.New("missing or unknown read token")
	}
	if cause == nil && h != nil {
		if err := h.Check(ctx, Request{Action: ActionRead, Path: v.Path, IP: ip.String(), Token: v.Token}); err != nil {
			cause, reason = err, ReasonHookDenied
		}
	}
	if cause == nil {
		p.http.Succeed(key)
		return nil
	}
	return &Denied{Reason: reason, Delay: p.http.Fail(key), TokenPresented: v.Token != "", Err: cause,
		Msg: fmt.Sprintf("a valid token is needed to watch path %q; send Authorization: Bearer TOKEN (the player page takes ?token=TOKEN)", v.Path)}
}

// CheckAPI decides whether a control-API client may proceed: with a
// configured token it must send it; without one only clients on this host
// are answered, and a request that came through a proxy never counts as
// one of them (the proxy may sit on this host and serve the world).
func (p *Policy) CheckAPI(c Client, token string) error {
	want := p.rules.Load().APIToken
	if want == "" {
		switch {
		case c.Forwarded:
			return &Denied{Reason: ReasonForbidden,
				Msg: "the control API does not answer through a reverse proxy while api.token is empty; set api.token and send Authorization: Bearer TOKEN, or call the API on this host directly"}
		case !c.Addr.IsLoopback():
			return &Denied{Reason: ReasonForbidden,
				Msg: "the control API only answers this host while api.token is empty; set api.token and send Authorization: Bearer TOKEN"}
		}
		return nil
	}
	key := Key(c.Addr)
	if d := p.http.Locked(key); d > 0 {
		return lockedOut(d)
	}
	if !Equal(token, want) {
		return &Denied{Reason: ReasonUnauthorized, Delay: p.http.Fail(key), TokenPresented: token != "",
			Msg: "missing or wrong API token; send Authorization: Bearer TOKEN with api.token"}
	}
	p.http.Succeed(key)
	return nil
}

// lockedOut refuses a client whose token failures locked it out for d.
func lockedOut(d time.Duration) *Denied {
	return &Denied{Reason: ReasonThrottled, RetryAfter: d,
		Msg: fmt.Sprintf("too many wrong tokens from this address; retry in %v with the right one", d.Round(time.Second))}
}

// RetryAfterSeconds is a Retry-After header value for d: whole seconds,
// rounded up, so a client that waits that long is let in.
func RetryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(int((d + time.Second - 1) / time.Second))
}

// sameHook compares a running hook's settings with wanted ones, whose zero
// values stand for the defaults NewHook fills in.
func sameHook(have, want HookConfig) bool {
	return have.URL == want.URL &&
		(want.Timeout == 0 || have.Timeout == want.Timeout) &&
		have.CacheTTL == want.CacheTTL &&
		(want.MaxEntries == 0 || have.MaxEntries == want.MaxEntries)
}

// Penalty is how long earlier failures from remote's address still refuse
// or hold back its next attempt, over both throttles.
func (p *Policy) Penalty(remote string) time.Duration {
	key := Key(AddrOf(remote))
	return max(p.publish.Remaining(key), p.http.Remaining(key))
}
