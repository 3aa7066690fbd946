package whep

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/srtwhep/srtwhep/pkg/auth"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/plane"
)

// errICENotStarted ends a session whose viewer never sent an ICE check.
var errICENotStarted = errors.New("no ICE check from the viewer within the ICE start timeout")

// handshakeKey is the client a POST's token and slots are counted against:
// the address the HTTP listener derived (the real client behind a trusted
// proxy), per /64 for IPv6 like every other per-client limit.
func handshakeKey(r *http.Request) string {
	return auth.Key(auth.ClientOf(r).Addr)
}

// awaitConnected waits until sess is connected. The session holds a
// pending slot (taken at POST) until its viewer starts ICE, then a
// handshake slot until it is connected or gives up; whatever the outcome
// it gives back the slot it holds. A viewer that has not sent a single
// ICE check ICEStartTimeout after the answer is closed then: an offer
// nobody means to complete costs its reader and connection for that long
// and no handshake slot at all. Once ICE has started the full
// HandshakeTimeout applies, since DTLS and a relayed path may take a
// while.
func (s *Server) awaitConnected(sess *session) error {
	// Held until the viewer is connected or gone (admission.Offer).
	defer sess.held.Release()
	deadline := time.NewTimer(s.cfg.HandshakeTimeout)
	defer deadline.Stop()
	iceStart := time.NewTimer(s.cfg.Limits.ICEStartTimeout)
	defer iceStart.Stop()
	connected, started := sess.tr.Connected(), sess.iceStarted
	logged := false
	opened := func() {
		if !logged {
			logged = true
			sess.log.Info("viewer opened")
		}
	}
	// toHandshake moves the session from its pending slot to its reader
	// slot and a handshake slot.
	toHandshake := func() error {
		opened()
		started = nil
		if err := s.claimReader(sess); err != nil {
			return err
		}
		err := sess.held.StartHandshake()
		if err != nil {
			s.stats.reject(rejectHandshakeLimit)
			s.stats.handshakeFailures.Add(1)
			s.refusals.RefusedFrom(sess.remote, sess.path, http.StatusServiceUnavailable, probHandshakes, err.Error(), "")
		}
		return err
	}
	for {
		select {
		case <-connected:
			opened()
			// Connected before its ICE start was seen (both were ready
			// at once): the reader slot is still to take.
			if started != nil {
				return s.claimReader(sess)
			}
			return nil
		case <-started:
			if err := toHandshake(); err != nil {
				return err
			}
		case <-iceStart.C:
			if started == nil {
				continue
			}
			// The callback and the state may race; the state decides.
			if !sess.tr.ICEStarted() {
				s.stats.handshakeFailures.Add(1)
				return errICENotStarted
			}
			if err := toHandshake(); err != nil {
				return err
			}
		case <-deadline.C:
			s.stats.handshakeFailures.Add(1)
			return plane.ErrHandshakeTimeout
		case <-sess.ctx.Done():
			if plane.Failed(context.Cause(sess.ctx)) {
				s.stats.handshakeFailures.Add(1)
			}
			return context.Cause(sess.ctx)
		}
	}
}

// errFullAtICE ends a session whose viewer started ICE after its path, or
// the server, reached the reader cap: the cap counts viewers who started
// to connect, not answered offers, so the POST's check is repeated here.
var errFullAtICE = errors.New("the viewer limit was reached before the viewer's ICE started")

// claimReader takes sess's reader slot when its viewer starts ICE. The
// refusal is what the POST would have got then (503 path-full or
// server-full, counted as reader_cap or server_full): a player retries
// after Retry-After as it does on a 503.
func (s *Server) claimReader(sess *session) error {
	err := sess.reader.Claim()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, hub.ErrPathFull):
		s.stats.reject(rejectReaderCap)
		s.refusals.RefusedFrom(sess.remote, sess.path, http.StatusServiceUnavailable, probPathFull,
			fmt.Sprintf("path %q reached its viewer limit before the viewer's ICE started; retry later", sess.path), "")
	case errors.Is(err, hub.ErrServerFull):
		s.stats.reject(rejectServerFull)
		s.refusals.RefusedFrom(sess.remote, sess.path, http.StatusServiceUnavailable, probServerFull,
			fmt.Sprintf("the server reached its viewer limit before the viewer's ICE started (%v); retry later", err), "")
	default:
		return err // the path ended: nothing to refuse
	}
	return fmt.Errorf("%w: %v", errFullAtICE, err)
}
