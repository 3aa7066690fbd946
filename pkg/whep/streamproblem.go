package whep

import (
	"errors"
	"fmt"

	"github.com/srtwhep/srtwhep/pkg/hub"
)

// StreamProblem is why a path's viewers would get no picture (ingest's
// per-path record, adapted by the composition root).
type StreamProblem struct {
	// Live: the publisher streams but nothing in it is decodable (no IDR
	// with its parameter sets, a profile browsers cannot decode); false:
	// the path's last publisher was refused.
	Live   bool
	Detail string // what happened and the fix on the encoder
}

// streamProblem refuses a POST whose path has a StreamProblem, given what
// AddReader said (err): a refusal only while nobody publishes; a live
// problem whether or not the hub has a publisher, since a connection
// claims its path only with its first decodable picture (pkg/ingest), so
// one that streams without any never becomes the hub's publisher.
func (s *Server) streamProblem(path string, err error) *denial {
	if s.cfg.Problem == nil {
		return nil
	}
	noPublisher := errors.Is(err, hub.ErrNoPublisher) || errors.Is(err, hub.ErrEnded)
	if err != nil && !noPublisher {
		return nil
	}
	p, ok := s.cfg.Problem(path)
	if !ok || (!p.Live && !noPublisher) {
		return nil
	}
	slug := probRefused
	if p.Live {
		slug = probNoPicture
	}
	return &denial{slug, fmt.Sprintf("path %q: %s", path, p.Detail)}
}
