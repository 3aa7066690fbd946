package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/config"
)

// TestOpenPublishWarning: the start-up warning names exactly what can be
// published without a secret, and is silent when nothing can.
func TestOpenPublishWarning(t *testing.T) {
	cred := config.Path{PublishUser: "cam", PublishPass: "publish-pass-0123456"}
	for _, tc := range []struct {
		name   string
		mutate func(*config.Config)
		want   []string
	}{
		{"defaults", func(*config.Config) {}, []string{"every path not listed under paths"}},
		{"credentials everywhere", func(c *config.Config) {
			c.PathDefaults = cred
			c.Paths = map[string]config.Path{"live/a": cred}
		}, nil},
		{"one listed path open", func(c *config.Config) {
			c.PathDefaults = cred
			c.Paths = map[string]config.Path{"live/b": {}, "live/a": {PublishIPs: []string{"10.0.0.0/8"}}, "live/c": {}}
		}, []string{"live/b", "live/c"}},
		{"hook decides", func(c *config.Config) { c.AuthHook.URL = "http://127.0.0.1:9/auth" }, nil},
	} {
		c := config.Default()
		tc.mutate(c)
		if got := openPaths(c); !slices.Equal(got, tc.want) {
			t.Errorf("%s: open %q, want %q", tc.name, got, tc.want)
		}
	}
	logs := &testkit.LogBuffer{}
	warnOpenPublishing(logs.Logger(0), config.Default())
	if l := logs.Lines("level=WARN", "anyone who can reach the SRT port may publish on every path not listed under paths", "pathDefaults.publishUser"); len(l) != 1 {
		t.Errorf("warning lines %q in:\n%s", l, logs.String())
	}
	logs = &testkit.LogBuffer{}
	c := config.Default()
	c.PathDefaults = cred
	warnOpenPublishing(logs.Logger(0), c)
	if strings.Contains(logs.String(), "may publish") {
		t.Errorf("warned with credentials set:\n%s", logs.String())
	}
}

// TestOpenTURNWarning: static TURN credentials on a path anyone may watch
// are warned about once; minted ones and token-protected paths are not.
func TestOpenTURNWarning(t *testing.T) {
	static := config.ICEServer{URLs: []string{"turn:t.example.org:3478"}, Username: "u", Credential: "c"}
	minted := config.ICEServer{URLs: []string{"turn:t.example.org:3478"}, AuthSecret: "s3cret"}
	tokens := config.Path{ReadTokens: []string{"a-viewer-token-0123456789"}}
	for _, tc := range []struct {
		name   string
		mutate func(*config.Config)
		warn   bool
	}{
		{"static, open", func(c *config.Config) { c.WebRTC.ICEServers = []config.ICEServer{static} }, true},
		{"static, one listed path open", func(c *config.Config) {
			c.WebRTC.ICEServers = []config.ICEServer{static}
			c.PathDefaults = tokens
			c.Paths = map[string]config.Path{"live/a": {}}
		}, true},
		{"static, tokens everywhere", func(c *config.Config) {
			c.WebRTC.ICEServers = []config.ICEServer{static}
			c.PathDefaults = tokens
		}, false},
		{"static, hook decides", func(c *config.Config) {
			c.WebRTC.ICEServers = []config.ICEServer{static}
			c.AuthHook.URL = "http://127.0.0.1:9/auth"
		}, false},
		{"minted, open", func(c *config.Config) { c.WebRTC.ICEServers = []config.ICEServer{minted} }, false},
	} {
		c := config.Default()
		tc.mutate(c)
		logs := &testkit.LogBuffer{}
		warnOpenTURN(logs.Logger(0), c)
		got := len(logs.Lines("level=WARN", "static TURN credentials of turn:t.example.org:3478 are served to anyone", "authSecret"))
		if want := map[bool]int{true: 1, false: 0}[tc.warn]; got != want {
			t.Errorf("%s: %d warning lines, want %d:\n%s", tc.name, got, want, logs.String())
		}
	}
}
