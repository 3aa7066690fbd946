package auth

import (
	"strings"
	"testing"
	"time"
)

// An SRT viewer meets the read rules in the handshake: the address list,
// then the token (the streamid's password); a failure penalises its
// address at once, since the handshake cannot hold its answer back.
func TestCheckSRTViewer(t *testing.T) {
	rules := Rules{ForPath: func(path string) PathRules {
		switch path {
		case "live/lan":
			return PathRules{ReadIPs: []string{"10.0.0.0/8"}}
		case "live/locked":
			return PathRules{ReadTokens: []string{"opensesame"}}
		}
		return PathRules{}
	}}
	p := NewPolicy(rules, ThrottleConfig{Base: time.Hour, Max: time.Hour})
	t.Cleanup(p.Close)
	for _, tc := range []struct {
		name   string
		v      Viewer
		reason Reason
	}{
		{"open path", Viewer{Path: "live/open", Remote: "192.0.2.1:5000"}, 0},
		{"allowed address", Viewer{Path: "live/lan", Remote: "10.1.2.3:5000"}, 0},
		{"other address", Viewer{Path: "live/lan", Remote: "192.0.2.2:5000"}, ReasonForbidden},
		{"right token", Viewer{Path: "live/locked", Remote: "192.0.2.3:5000", Token: "opensesame"}, 0},
		{"no token", Viewer{Path: "live/locked", Remote: "192.0.2.4:5000"}, ReasonUnauthorized},
		{"wrong token", Viewer{Path: "live/locked", Remote: "192.0.2.5:5000", Token: "guess"}, ReasonUnauthorized},
		// The address that just failed is refused even with the token.
		{"penalised", Viewer{Path: "live/locked", Remote: "192.0.2.5:6000", Token: "opensesame"}, ReasonThrottled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := p.CheckSRTViewer(tc.v)
			if tc.reason == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			d := AsDenied(err)
			if d == nil || d.Reason != tc.reason {
				t.Fatalf("%v, want a %s refusal", err, tc.reason)
			}
			if tc.reason == ReasonUnauthorized && (!strings.Contains(d.Msg, "read:PATH:USER:TOKEN") || d.TokenPresented != (tc.v.Token != "")) {
				t.Fatalf("refusal %q (token presented %v) does not say how to send the token", d.Msg, d.TokenPresented)
			}
		})
	}
}

// The hook is asked with the read action and the token, off the
// handshake; its refusal is a hook denial.
func TestAskHookSRTViewer(t *testing.T) {
	hs := startHook(t, "live/ok")
	p := NewPolicy(Rules{Hook: HookConfig{URL: hs.URL}}, ThrottleConfig{})
	t.Cleanup(p.Close)
	if err := p.AskHookSRTViewer(t.Context(), Viewer{Path: "live/ok", Remote: "192.0.2.1:5000", Token: "tok"}); err != nil {
		t.Fatalf("allowed reader: %v", err)
	}
	hs.mu.Lock()
	last := hs.last
	hs.mu.Unlock()
	if last.Action != ActionRead || last.Token != "tok" || last.IP != "192.0.2.1" {
		t.Fatalf("hook asked %+v", last)
	}
	err := p.AskHookSRTViewer(t.Context(), Viewer{Path: "live/no", Remote: "192.0.2.1:5000"})
	if d := AsDenied(err); d == nil || d.Reason != ReasonHookDenied {
		t.Fatalf("refused reader: %v, want a hook denial", err)
	}
	// Without a hook nothing is asked.
	open := NewPolicy(Rules{}, ThrottleConfig{})
	t.Cleanup(open.Close)
	if err := open.AskHookSRTViewer(t.Context(), Viewer{Path: "live/no"}); err != nil {
		t.Fatalf("no hook: %v", err)
	}
}
