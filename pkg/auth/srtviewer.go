package auth

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A viewer reading over SRT is decided in two steps, like an SRT
// publisher: the local rules during the handshake, where the refusal can
// carry an SRT reject reason but nothing may wait (it runs on libsrt's
// receive thread, which serves every connection of the port), and the
// hook afterwards on the reader's own goroutine. Its failures count in the
// SRT throttle, which refuses at once instead of holding the answer back
// as HTTP does. The streamid's password (s=, or PASS in
// read:PATH:USER:PASS) is its token.

// CheckSRTViewer applies the local read rules to a viewer connecting over
// SRT: the failure throttle, the path's address list and its read tokens.
// It is O(1) and never blocks. The hook is asked separately
// (AskHookSRTViewer).
func (p *Policy) CheckSRTViewer(v Viewer) error {
	ip := AddrOf(v.Remote)
	key := Key(ip)
	if d := p.publish.Remaining(key); d > 0 {
		return &Denied{Reason: ReasonThrottled, RetryAfter: d,
			Msg: fmt.Sprintf("too many failed attempts from this address; retry in %v with a valid token", d.Round(time.Millisecond))}
	}
	rules := p.rules.Load().ForPath(v.Path)
	if !IPAllowed(rules.ReadIPs, ip) {
		return &Denied{Reason: ReasonForbidden,
			Msg: fmt.Sprintf("address %s may not watch path %q; add it to readIPs of the path", ip, v.Path)}
	}
	if len(rules.ReadTokens) == 0 {
		return nil
	}
	if !TokenValid(rules.ReadTokens, v.Token) {
		p.publish.Fail(key)
		return &Denied{Reason: ReasonUnauthorized, TokenPresented: v.Token != "", Err: errors.New("missing or unknown read token"),
			Msg: fmt.Sprintf("a valid token is needed to watch path %q; use streamid read:PATH:USER:TOKEN or #!::r=PATH,m=request,s=TOKEN", v.Path)}
	}
	if !p.HasHook() {
		p.publish.Succeed(key)
	}
	return nil
}

// AskHookSRTViewer asks the hook, if any, whether v may read over SRT. It
// may take the hook's whole timeout, so it belongs on the reader's own
// goroutine.
func (p *Policy) AskHookSRTViewer(ctx context.Context, v Viewer) error {
	h := p.hook.Load()
	if h == nil {
		return nil
	}
	ip := AddrOf(v.Remote)
	return p.askSRTHook(ctx, h, ip, Request{Action: ActionRead, Path: v.Path, IP: ip.String(), Token: v.Token})
}
