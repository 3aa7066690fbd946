package srt

import (
	"fmt"
	"net"
	"time"

	"github.com/haivision/srtgo"

	"github.com/srtwhep/srtwhep/pkg/pathname"
)

// whepHint tells a caller who tried to read over SRT, on a server that
// serves no SRT readers (Config.ServeRead nil), where reading works.
const whepHint = "reading over SRT is not served here: use WHEP at http://HOST:8889/PATH/whep"

// onHandshake is srtgo's listen callback. It runs on libsrt's receive
// thread in the middle of a handshake: no blocking work, no hub locks. What
// it learns is parked in s.pending for Accept, keyed by the socket id that
// Accept will return for the same connection.
func (s *Server) onHandshake(sock *srtgo.SrtSocket, _ int, peer *net.UDPAddr, streamid string) bool {
	s.churned()
	remote := "unknown"
	if peer != nil {
		remote = peer.String()
	}
	who := "srt publisher rejected"
	reject := func(reason int, path, why string, attrs ...any) bool {
		// The reason travels back to the caller in the handshake response.
		_ = sock.SetRejectReason(reason)
		s.rejects.warn(s.log, who+"|"+reasonName(reason), who, remote, append([]any{"path", path, "remote", remote,
			"streamid", clipStreamID(redactStreamID(streamid)), "reason", reasonName(reason), "err", why}, attrs...)...)
		return false
	}

	id, err := ParseStreamID(streamid)
	if err != nil {
		return reject(srtgo.RejectionReasonBadRequest, "", err.Error(), "expected", streamIDSyntax)
	}
	admit := s.cfg.Admit
	switch {
	case id.Mode == ModePublish:
	case id.Reading() && s.cfg.ServeRead == nil:
		return reject(srtgo.RejectionReasonBadMode, id.Path,
			fmt.Sprintf("mode %q: %s", id.Mode, whepHint), "expected", streamIDSyntax)
	case id.Reading():
		who, admit = "srt reader rejected", s.cfg.AdmitRead
	default:
		return reject(srtgo.RejectionReasonBadMode, id.Path,
			fmt.Sprintf("mode %q: use m=publish to publish or m=request to read", id.Mode), "expected", streamIDSyntax)
	}
	if admit != nil {
		if err := admit(Request{StreamID: id, Remote: remote}); err != nil {
			return reject(rejectReason(err), id.Path, err.Error())
		}
	}
	if s.cfg.Passphrase != nil {
		if pass := s.cfg.Passphrase(id.Path); pass != "" {
			if err := sock.SetSockOptString(srtgo.SRTO_PASSPHRASE, pass); err != nil {
				return reject(RejectionReasonInternal, id.Path,
					fmt.Sprintf("setting the passphrase (must be 10-79 characters): %v", err))
			}
			if s.cfg.PBKeyLen != 0 {
				if err := sock.SetSockOptInt(srtgo.SRTO_PBKEYLEN, s.cfg.PBKeyLen); err != nil {
					return reject(RejectionReasonInternal, id.Path, fmt.Sprintf("setting pbkeylen: %v", err))
				}
			}
		}
	}

	now := time.Now()
	s.mu.Lock()
	for k, p := range s.pending {
		if now.Sub(p.at) > pendingTTL {
			delete(s.pending, k)
		}
	}
	if len(s.pending) >= maxPending {
		s.mu.Unlock()
		return reject(srtgo.RejectionReasonOverload, id.Path,
			fmt.Sprintf("%d handshakes are waiting to be accepted; retry in a moment", maxPending))
	}
	rec := pendingConn{id: id, remote: remote, at: now}
	if !id.Reading() {
		rec.pubKey = publisherKey(peer)
		if err := s.checkPublisherLocked(rec.pubKey); err != nil {
			s.mu.Unlock()
			return reject(rejectReason(err), id.Path, err.Error())
		}
	}
	s.pending[int(sock.GetSocket())] = rec
	s.mu.Unlock()
	return true
}

// clipStreamID keeps a rejected streamid (up to 512 bytes) in a log line
// to about a path name's length.
func clipStreamID(s string) string {
	if n := pathname.MaxLen + 16; len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// maxPending bounds the handshakes parked for Accept: accepted ones leave
// at once and failed ones after pendingTTL, so only a flood of completed
// handshakes that then fail (a wrong passphrase, from many addresses)
// reaches it.
const maxPending = 1024
