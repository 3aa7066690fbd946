package whep

import (
	"errors"
	"fmt"
	"net/http"

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

// retryAfterProblem: the fix needs a person at the encoder, so the player
// need not ask every second; a publisher that comes back fixed is still
// found within a few.
const retryAfterProblem = "3"

// streamProblem answers a POST whose path has a StreamProblem, given what
// AddReader said (err): a refusal only while nobody publishes, a live
// problem only while its publisher does. True when it answered.
func (s *Server) streamProblem(w http.ResponseWriter, r *http.Request, path string, err error, raw string) bool {
	if s.cfg.Problem == nil {
		return false
	}
	noPublisher := errors.Is(err, hub.ErrNoPublisher) || errors.Is(err, hub.ErrEnded)
	if err != nil && !noPublisher {
		return false
	}
	p, ok := s.cfg.Problem(path)
	if !ok || p.Live == noPublisher {
		return false
	}
	slug := probRefused
	if p.Live {
		slug = probNoPicture
	}
	s.stats.reject(rejectNoPublisher)
	w.Header().Set("Retry-After", retryAfterProblem)
	s.refuse(w, r, path, http.StatusConflict, slug, fmt.Sprintf("path %q: %s", path, p.Detail), raw)
	return true
}
