package main

// The config turned into what the packages take: access rules, takeover
// rules, the transcode budget, why a path cannot be played.

import (
	"time"

	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/config"
	"github.com/srtwhep/srtwhep/pkg/cpubudget"
	"github.com/srtwhep/srtwhep/pkg/ingest"
	"github.com/srtwhep/srtwhep/pkg/whep"
)

// accessRules turns the config's access keys into the policy's rules.
func accessRules(cfg *config.Config) auth.Rules {
	return auth.Rules{
		ForPath: func(path string) auth.PathRules {
			pc := cfg.PathConfig(path)
			return auth.PathRules{PublishIPs: pc.PublishIPs, PublishUser: pc.PublishUser, PublishPass: pc.PublishPass,
				ReadIPs: pc.ReadIPs, ReadTokens: pc.ReadTokens}
		},
		APIToken: cfg.API.Token,
		Hook:     auth.HookConfig{URL: cfg.AuthHook.URL, Timeout: time.Duration(cfg.AuthHook.Timeout), CacheTTL: time.Duration(cfg.AuthHook.CacheTTL)},
	}
}

// takeovers maps overridePublisher to the ingest rule.
var takeovers = map[config.Takeover]ingest.Takeover{
	config.TakeoverNever: ingest.TakeoverNever, config.TakeoverEntitled: ingest.TakeoverEntitled, config.TakeoverAny: ingest.TakeoverAny,
}

// streamProblem is whep.Config.Problem: ingest's record of why a path's
// viewers would get no picture.
func (s *server) streamProblem(path string) (whep.StreamProblem, bool) {
	p, ok := s.ingest.Problem(path)
	return whep.StreamProblem{Live: p.Live, Detail: p.Text}, ok
}

// transcodeLimits builds the transcode CPU budget, a share of the CPU the
// process may use (affinity mask and cgroup quota, as admission counts
// it), and the caps every transcoder applies.
func (s *server) transcodeLimits(t config.Transcode) ingest.TranscodeLimits {
	s.transcodes = cpubudget.New(float64(t.MaxCPUPercent) / 100 * s.load.CPUs())
	return ingest.TranscodeLimits{Budget: s.transcodes, MaxHeight: t.MaxHeight, MaxFPS: float64(t.MaxFrameRate),
		MaxDecodeArea: t.MaxDecodeArea}
}
