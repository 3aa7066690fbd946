package ingest

import (
	"fmt"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/srt"
)

// TestStatsKeepAndForget: configured paths are reported without a
// publisher; paths whose publisher left are remembered for recentFor and
// at most maxRemembered of them, so probing names cannot grow memory.
func TestStatsKeepAndForget(t *testing.T) {
	m := New(Config{Hub: hub.New(hub.Config{}), Policy: auth.NewPolicy(auth.Rules{}, auth.ThrottleConfig{}),
		Keep: func() []string { return []string{"live/idle"} }})
	now := time.Now()
	m.mu.Lock()
	m.past["live/old"] = &history{totals: Totals{IngestFrames: 9}, lastSeen: now.Add(-2 * recentFor)}
	m.past["live/recent"] = &history{totals: Totals{IngestFrames: 7}, lastSeen: now.Add(-time.Minute)}
	m.mu.Unlock()

	got := map[string]PathStats{}
	for _, p := range m.Stats() {
		got[p.Path] = p
	}
	if p, ok := got["live/idle"]; !ok || p.Publisher != nil {
		t.Errorf("configured path: %+v, want it listed without a publisher", p)
	}
	if p := got["live/recent"]; p.Totals.IngestFrames != 7 || p.Publisher != nil {
		t.Errorf("recent path: %+v, want its totals kept", p)
	}
	if _, ok := got["live/old"]; ok {
		t.Error("a path gone for longer than recentFor is still reported")
	}

	m.mu.Lock()
	for i := range maxRemembered + 50 {
		m.past[fmt.Sprintf("probe/%d", i)] = &history{lastSeen: now.Add(time.Duration(i) * time.Millisecond)}
	}
	m.pruneLocked(now)
	n := len(m.past)
	_, newestKept := m.past[fmt.Sprintf("probe/%d", maxRemembered+49)]
	m.mu.Unlock()
	if n != maxRemembered || !newestKept {
		t.Errorf("remembered %d paths (newest kept: %v), want %d with the newest", n, newestKept, maxRemembered)
	}
}

// TestAdmitIsLocal: the listen-callback check refuses what the policy
// refuses without asking the hook, which may take its whole timeout.
func TestAdmitIsLocal(t *testing.T) {
	policy := auth.NewPolicy(auth.Rules{
		ForPath: func(string) auth.PathRules { return auth.PathRules{PublishUser: "u", PublishPass: "p"} },
		// A hook that cannot answer: Admit must not wait for it.
		Hook: auth.HookConfig{URL: "http://192.0.2.1:9/auth", Timeout: time.Hour},
	}, auth.ThrottleConfig{})
	defer policy.Close()
	m := New(Config{Hub: hub.New(hub.Config{}), Policy: policy})
	req := func(path, user, pass string) srt.Request {
		return srt.Request{StreamID: srt.StreamID{Mode: srt.ModePublish, Path: path, User: user, Pass: pass}, Remote: "127.0.0.1:5000"}
	}
	start := time.Now()
	if err := m.Admit(req("live/a", "u", "p")); err != nil {
		t.Fatalf("good credentials: %v", err)
	}
	if d := auth.AsDenied(m.Admit(req("live/a", "u", "wrong"))); d == nil || d.Reason != auth.ReasonUnauthorized {
		t.Fatalf("wrong password: %v, want unauthorized", d)
	}
	if time.Since(start) > time.Second {
		t.Fatalf("Admit took %v: it must not wait on the hook", time.Since(start))
	}
}
