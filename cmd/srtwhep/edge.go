package main

import (
	"log/slog"
	"time"

	"github.com/srtwhep/srtwhep/pkg/config"
	"github.com/srtwhep/srtwhep/pkg/edge"
)

// newPuller builds the edge's puller: paths with a source are pulled over
// SRT through the same ingest pipeline publishers take. Each demand reads
// the live configuration, so a reload applies to the next pull.
func newPuller(s *server, log *slog.Logger) (*edge.Puller, error) {
	return edge.New(edge.Config{
		Hub:         s.hub,
		Serve:       s.ingest.Serve,
		Source:      s.edgeSource,
		Latency:     time.Duration(s.cfg.SRT.Latency),
		PBKeyLen:    s.cfg.SRT.PBKeyLen,
		ReadTimeout: time.Duration(s.cfg.SRT.ReadTimeout),
		MaxPulls:    s.cfg.SRT.MaxPulls,
		Events:      s.hooks.Func(),
		Logger:      log,
	})
}

// edgeSource is a path's source in the live configuration; validation
// already refused a source that does not parse.
func (s *server) edgeSource(path string) edge.Source {
	pc := s.config().PathConfig(path)
	src, err := config.ParseSource(pc.Source)
	if err != nil || src.Addr == "" {
		return edge.Source{}
	}
	return edge.Source{Addr: src.Addr, User: src.User, Pass: src.Pass, Passphrase: src.Passphrase, Latency: src.Latency,
		URL: src.Redacted, Timeout: time.Duration(pc.SourceTimeout), Linger: time.Duration(pc.SourceLinger)}
}
