package mediaplane

import (
	"crypto/rand"
	"encoding/binary"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/stun/v4"

	"github.com/srtwhep/srtwhep/pkg/plane"
)

// Consent (RFC 7675) decides where media may go. A viewer knows its ICE
// password and its SRTP keys, so from a spoofed source address it can
// forge both a check with valid integrity and USE-CANDIDATE and
// authenticated SRTCP: neither proves that the address wants the stream,
// and moving media on them would let one viewer aim its stream at a third
// party for a few bytes of STUN. What a spoofer cannot do is receive at
// the address it spoofs. So an address is proven only when it answers a
// check of ours, whose 96-bit transaction ID it can learn only by
// receiving it there, with the viewer's integrity; the address the DTLS
// handshake completed at is proven too, since finishing it needs the
// server's random values sent there. A browser, being a full agent,
// answers any check with the right credentials, even from a lite peer.
//
// A nominated address that is not proven gets nothing: media stays at the
// proven address until the new one answers, which a real browser does
// within one round trip, so a genuine move costs milliseconds while a
// spoofed one costs the victim a few checks (maxWantChecks) and no media.
// Nominations over ICE-TCP move at once: the TCP handshake already proved
// that the peer receives there.
const (
	// consentInterval is RFC 7675's check interval; each wait is drawn
	// from 0.8 to 1.2 times it, so checks of many viewers do not align.
	consentInterval = 5 * time.Second
	// wantRetry spaces the checks to a nominated address; after
	// maxWantChecks unanswered ones the nomination is refused.
	wantRetry     = 500 * time.Millisecond
	maxWantChecks = 4
	// maxConsentTx bounds the checks in flight per viewer: the periodic
	// one, a nominated address's, and triggered checks on other pairs.
	maxConsentTx = 8
	// consentLogEvery limits the refused-nomination line, server-wide.
	consentLogEvery = time.Second
)

// consentTx is one check of ours awaiting its answer.
type consentTx struct {
	id  [stun.TransactionIDSize]byte
	to  route
	key stun.MessageIntegrity // the viewer's, which signs the answer
}

// consentState is one viewer's consent: the checks in flight, the
// addresses that answered, and a nominated address waiting for proof.
type consentState struct {
	mu        sync.Mutex
	txs       [maxConsentTx]consentTx
	nextTx    int
	answered  [maxAddrsPerViewer]route // newest replaces oldest
	answerAt  [maxAddrsPerViewer]int64
	nextAns   int
	want      route // nominated, unproven; zero when none
	wantSent  int
	wantAt    int64
	provenAt  int64 // unix ns of the last proof for where media goes
	nextCheck int64
}

// consentProven records proof, at now, of the address media goes to.
func (v *Viewer) consentProven(now int64) {
	v.consent.mu.Lock()
	v.consent.provenAt = now
	v.consent.nextCheck = now + v.srv.checkWait()
	v.consent.mu.Unlock()
}

// checkWait is the wait before the next periodic check: RFC 7675's
// interval, or a sixth of a shorter proof timeout (tests), so that a live
// viewer is checked several times within the timeout.
func (s *Server) checkWait() int64 {
	return s.checkInterval() * int64(80+mrand.IntN(41)) / 100
}

func (s *Server) checkInterval() int64 { return int64(min(consentInterval, s.cfg.ProofTimeout/6)) }

// sendCheck sends our Binding request to to with c's credentials and
// remembers its transaction (stun.TransactionID draws 96 bits from
// crypto/rand), so that only an answer from there proves it.
func (s *Server) sendCheck(c *iceCreds, to route) {
	if c == nil || c.remoteKey == nil {
		return
	}
	// Checks are rare (one per viewer every few seconds), so each builds
	// its own message rather than sharing a reader's buffer.
	msg := new(stun.Message)
	var tie [8]byte
	_, _ = rand.Read(tie[:]) // never fails since Go 1.24
	err := msg.Build(stun.TransactionID, stun.BindingRequest,
		stun.NewUsername(c.remoteUfrag+":"+c.ufrag),
		ice.AttrControlled(binary.BigEndian.Uint64(tie[:])),
		ice.PriorityAttr(hostPriority),
		c.remoteKey, stun.Fingerprint)
	if err != nil {
		return
	}
	cs := &c.v.consent
	cs.mu.Lock()
	cs.txs[cs.nextTx] = consentTx{id: msg.TransactionID, to: to, key: c.remoteKey}
	cs.nextTx = (cs.nextTx + 1) % maxConsentTx
	cs.mu.Unlock()
	s.writeTo(msg.Raw, to)
}

// handleAnswer takes a Binding success response: when it answers one of
// our checks from the address the check went to, with the viewer's
// integrity, that address is proven.
func (s *Server) handleAnswer(resp *stun.Message, from route, now int64) {
	v := s.viewerAt(from)
	if v == nil {
		s.stats.droppedOther.Add(1)
		return
	}
	cs := &v.consent
	cs.mu.Lock()
	i := cs.find(resp.TransactionID, from)
	if i < 0 {
		cs.mu.Unlock()
		s.stats.droppedOther.Add(1)
		return
	}
	key := cs.txs[i].key
	cs.mu.Unlock()
	if key.Check(resp) != nil || stun.Fingerprint.Check(resp) != nil {
		// The transaction stays open: a forged answer must not use up
		// the real one's.
		s.stats.badIntegrity.Add(1)
		return
	}
	s.stats.consentAnswers.Add(1)
	cs.mu.Lock()
	if i = cs.find(resp.TransactionID, from); i >= 0 {
		cs.txs[i] = consentTx{}
	}
	cs.answered[cs.nextAns], cs.answerAt[cs.nextAns] = from, now
	cs.nextAns = (cs.nextAns + 1) % maxAddrsPerViewer
	move := cs.want != (route{}) && cs.want == from
	if move {
		cs.want = route{}
	}
	cs.mu.Unlock()
	if cur := v.remote.Load(); cur != nil && cur.route == from {
		v.consentProven(now)
	} else if move {
		v.moveTo(from, s.inet6, now)
	}
}

func (cs *consentState) find(id [stun.TransactionIDSize]byte, from route) int {
	for i := range cs.txs {
		if cs.txs[i].key != nil && cs.txs[i].id == id && cs.txs[i].to == from {
			return i
		}
	}
	return -1
}

// nominate is the one place a nomination changes where media goes (see
// the comment at the top of this file); c is the credentials it came
// with.
func (s *Server) nominate(c *iceCreds, from route, now int64) {
	v := c.v
	cur := v.remote.Load()
	if cur != nil && cur.route == from {
		return
	}
	cs := &v.consent
	if cur == nil || from.tcp != nil || v.answeredSince(from, now-int64(s.cfg.ProofTimeout)) {
		// The latest nomination wins: an earlier one still unproven must
		// not pull media back when its answer comes.
		cs.mu.Lock()
		cs.want = route{}
		cs.mu.Unlock()
		v.moveTo(from, s.inet6, now)
		return
	}
	cs.mu.Lock()
	if cs.want == from {
		cs.mu.Unlock()
		return // its checks are under way
	}
	cs.want, cs.wantSent, cs.wantAt = from, 1, now
	cs.mu.Unlock()
	s.sendCheck(c, from)
}

func (v *Viewer) answeredSince(r route, since int64) bool {
	cs := &v.consent
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for i, a := range cs.answered {
		if a == r && cs.answerAt[i] > since {
			return true
		}
	}
	return false
}

// moveTo makes r, proven or the first address, where media goes.
func (v *Viewer) moveTo(r route, inet6 bool, now int64) {
	cur := v.remote.Load()
	v.setRemote(r, inet6)
	if cur == nil {
		return
	}
	v.consentProven(now)
	if v.state.Load() == stateConnected {
		// An ICE restart (or a NAT rebinding the browser nominated)
		// moved the media: worth a line, since ICE-TCP costs more.
		v.log().Info("viewer route changed", "media_remote", r.String(), "was", cur.route.String())
	}
}

// consentTick runs from the janitor for each viewer: it repeats or gives
// up the checks to a nominated address, sends the periodic check to where
// media goes, and says whether consent there has expired. c is the
// viewer's current credentials.
func (s *Server) consentTick(v *Viewer, c *iceCreds, now int64) error {
	cs := &v.consent
	cs.mu.Lock()
	var retry, failed route
	if cs.want != (route{}) && now-cs.wantAt >= int64(wantRetry) {
		if cs.wantSent < maxWantChecks {
			retry = cs.want
			cs.wantSent++
			cs.wantAt = now
		} else {
			failed = cs.want
			cs.want = route{}
		}
	}
	r := v.remote.Load()
	connected := v.state.Load() == stateConnected && r != nil && r.tcp == nil
	periodic := connected && now >= cs.nextCheck
	if periodic {
		cs.nextCheck = now + s.checkWait()
		if iv := s.checkInterval(); now-cs.provenAt > iv*13/10 {
			// The last check went unanswered: on a lossy link, check
			// five times as often rather than let consent lapse.
			cs.nextCheck = now + iv/5
		}
	}
	stale := connected && now-cs.provenAt > int64(s.cfg.ProofTimeout)
	cs.mu.Unlock()

	if retry != (route{}) {
		s.sendCheck(c, retry)
	}
	if failed != (route{}) {
		s.stats.consentFailures.Add(1)
		s.logConsent(v, "ICE nomination unanswered: media stays at the proven address", now, "nominated", failed.String())
	}
	if stale {
		s.stats.consentFailures.Add(1)
		s.logConsent(v, "consent checks unanswered for the proof timeout: media stops", now)
		return plane.ErrConsentExpired
	}
	if periodic {
		s.sendCheck(c, r.route)
	}
	return nil
}

// logConsent writes a consent failure line, at most one a second for the
// whole server, so that a flood of spoofed nominations costs one line.
// The viewer's logger already carries path, session and remote (the
// HTTP client's address), so the addresses here have keys of their own.
func (s *Server) logConsent(v *Viewer, msg string, now int64, attrs ...any) {
	last := s.consentLogAt.Load()
	if now-last < int64(consentLogEvery) || !s.consentLogAt.CompareAndSwap(last, now) {
		return
	}
	attrs = append(attrs, "media_remote", v.remoteString(), "consent_failures", s.stats.consentFailures.Load())
	v.log().Warn(msg, attrs...)
}
