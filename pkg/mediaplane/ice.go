package mediaplane

import (
	"bytes"
	"crypto/rand"
	"errors"
	"sync/atomic"

	"github.com/pion/stun/v4"

	"github.com/srtwhep/srtwhep/pkg/plane"
)

// maxAddrsPerViewer bounds the remote addresses one viewer may validate
// (one per candidate pair it checks, plus NAT rebinding): a browser checks
// a handful, and the address table must not grow without bound.
const maxAddrsPerViewer = 8

// iceCreds is one generation of a viewer's ICE credentials: a restart
// makes a new one, and the old one answers until the viewer uses the new.
type iceCreds struct {
	v           *Viewer
	ufrag, pwd  string // ours
	remoteUfrag string
	key         stun.MessageIntegrity // short-term, from pwd
	// remoteKey is the viewer's short-term key, from its offer's (or its
	// restart's) ice-pwd, for our triggered and consent checks.
	remoteKey stun.MessageIntegrity
	triggered atomic.Int32 // triggered checks sent with these credentials
}

// maxTriggeredChecks bounds the triggered checks per ICE generation: one
// is enough unless it is lost, and the viewer's own checks go on anyway.
const maxTriggeredChecks = 3

// hostPriority is the PRIORITY of our triggered checks: that of a host
// candidate (RFC 8445 §5.1.2.1: type preference 126, local 65535,
// component 1), as the answer's candidates carry.
const hostPriority = 126<<24 | 65535<<8 | 255

// iceChars is the ice-char alphabet of RFC 8839 §5.4.
const iceChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// randomICEString returns n random ice-chars; 64 letters, so each byte
// maps to one without bias.
func randomICEString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails since Go 1.24
	for i := range b {
		b[i] = iceChars[b[i]&63]
	}
	return string(b)
}

// newCreds returns fresh local credentials for v: a 16-character ufrag
// (96 bits, so a ufrag names one viewer) and a 32-character password
// (RFC 8839 asks for at least 128 bits).
func newCreds(v *Viewer, remoteUfrag string) *iceCreds {
	pwd := randomICEString(32)
	return &iceCreds{v: v, ufrag: randomICEString(16), pwd: pwd, remoteUfrag: remoteUfrag,
		key: stun.NewShortTermIntegrity(pwd)}
}

// handleSTUN answers an ICE connectivity or consent check (RFC 8445
// §7.3, as a lite agent) and learns the address it came from; before the
// viewer nominates, it also sends a triggered check (see triggeredCheck).
func (s *Server) handleSTUN(d *demuxState, b []byte, from route, now int64) {
	req := &d.req
	req.Raw = append(req.Raw[:0], b...)
	if err := req.Decode(); err != nil {
		s.stats.malformed.Add(1)
		return
	}
	if req.Type == stun.BindingSuccess {
		// The answer to one of our checks: proof of consent (consent.go).
		s.handleAnswer(req, from, now)
		return
	}
	if req.Type != stun.BindingRequest {
		s.stats.droppedOther.Add(1) // indications, error responses
		return
	}
	user, err := req.Get(stun.AttrUsername)
	if err != nil {
		s.stats.malformed.Add(1)
		return
	}
	local, remote, ok := bytes.Cut(user, []byte{':'})
	if !ok {
		s.stats.malformed.Add(1)
		return
	}
	s.mu.RLock()
	c := s.byUfrag[string(local)]
	s.mu.RUnlock()
	if c == nil || string(remote) != c.remoteUfrag {
		s.stats.unknownUfrag.Add(1)
		return
	}
	if c.key.Check(req) != nil || stun.Fingerprint.Check(req) != nil {
		s.stats.badIntegrity.Add(1)
		return
	}
	resp := &d.resp
	err = resp.Build(stun.NewTransactionIDSetter(req.TransactionID), stun.BindingSuccess,
		&stun.XORMappedAddress{IP: from.ap.Addr().Unmap().AsSlice(), Port: int(from.ap.Port())},
		c.key, stun.Fingerprint)
	if err != nil {
		s.stats.malformed.Add(1)
		return
	}
	// Learn first, answer second: once the viewer has the answer, the
	// address must already route to it.
	nominated := req.Contains(stun.AttrUseCandidate)
	s.checked(c, from, nominated, now)
	s.stats.stunAnswered.Add(1)
	s.writeTo(resp.Raw, from)
	if !nominated && c.remoteKey != nil && c.v.state.Load() == stateChecking &&
		c.triggered.Add(1) <= maxTriggeredChecks {
		s.triggeredCheck(c, from)
	}
}

// triggeredCheck sends the viewer a check of its own pair back, as a full
// agent's triggered check (RFC 8445 §7.3.1.4) would. A lite agent need
// not, but a controlling agent with regular nomination (pion's) nominates
// when a check arrives on a pair that already succeeded, instead of at its
// next check tick, 200 ms later: connecting, and the first frame, wait that
// much less. The viewer's answer also proves the address for consent, so
// a later nomination of this pair moves media at once.
func (s *Server) triggeredCheck(c *iceCreds, from route) {
	s.sendCheck(c, from)
}

// checked records a valid check: consent is fresh, the address is the
// viewer's, a new ICE generation replaces the old one, and a nominated
// pair (USE-CANDIDATE) becomes where media goes once it is proven (see
// nominate). Before any nomination the first validated address stands
// in, so a viewer that starts DTLS on it is answered there.
func (s *Server) checked(c *iceCreds, from route, nominated bool, now int64) {
	v := c.v
	v.lastSeen.Store(now)
	if v.state.CompareAndSwap(stateNew, stateChecking) && v.cfg.OnICEStart != nil {
		v.cfg.OnICEStart()
	}

	s.mu.RLock()
	known := s.byAddr[from] == v && v.creds == c
	s.mu.RUnlock()
	if !known {
		var evicted *tcpConn
		s.mu.Lock()
		if _, live := s.viewers[v]; live {
			if v.creds != c && v.pending == c {
				delete(s.byUfrag, v.creds.ufrag)
				v.creds, v.pending = c, nil
			}
			if s.byAddr[from] != v {
				if len(v.addrs) == maxAddrsPerViewer {
					// Evict the oldest, unless media goes there.
					i := 0
					if r := v.remote.Load(); r != nil && r.route == v.addrs[0] {
						i = 1
					}
					delete(s.byAddr, v.addrs[i])
					evicted = v.addrs[i].tcp
					v.addrs = append(v.addrs[:i], v.addrs[i+1:]...)
				}
				v.addrs = append(v.addrs, from)
				if prev := s.byAddr[from]; prev != nil {
					prev.forgetAddr(from)
				}
				s.byAddr[from] = v
			}
		}
		s.mu.Unlock()
		if evicted != nil {
			// Nothing routes to it any more, and left open it would hold
			// a slot of the caps and a goroutine until the viewer ends.
			s.stats.tcpEvicted.Add(1)
			evicted.close()
		}
	}
	if nominated || v.remote.Load() == nil {
		s.nominate(c, from, now)
	}
}

// forgetAddr drops from from v's addresses; s.mu is held.
func (v *Viewer) forgetAddr(from route) {
	for i, a := range v.addrs {
		if a == from {
			v.addrs = append(v.addrs[:i], v.addrs[i+1:]...)
			return
		}
	}
}

// viewerAt is the viewer a validated address belongs to, or nil.
func (s *Server) viewerAt(from route) *Viewer {
	s.mu.RLock()
	v := s.byAddr[from]
	s.mu.RUnlock()
	return v
}

// errRestartUfrag refuses an ICE restart without the viewer's new ufrag
// and password: the password signs our consent checks, without which
// media could not move to a new address.
var errRestartUfrag = errors.New("mediaplane: ICE restart needs the viewer's new ice-ufrag and ice-pwd")

// RestartICE starts a new ICE generation (RFC 8445 §9): remoteUfrag and
// remotePwd are the viewer's new credentials, and the returned ufrag and
// pwd are ours for the answer. The DTLS association and SRTP keys stay.
// Media keeps flowing to the current address until a new one is
// nominated and proven (consent.go); the old credentials answer checks
// until the first valid check with the new ones, which replaces them.
func (v *Viewer) RestartICE(remoteUfrag, remotePwd string) (ufrag, pwd string, err error) {
	if remoteUfrag == "" || remotePwd == "" {
		return "", "", errRestartUfrag
	}
	s := v.srv
	c := newCreds(v, remoteUfrag)
	c.remoteKey = stun.NewShortTermIntegrity(remotePwd)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, live := s.viewers[v]; !live {
		return "", "", plane.ErrClosed
	}
	if v.pending != nil {
		delete(s.byUfrag, v.pending.ufrag)
	}
	v.pending = c
	s.byUfrag[c.ufrag] = c
	return c.ufrag, c.pwd, nil
}
