package ingest

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/srtwhep/srtwhep/pkg/hub"
)

// Handover says how a path changes hands between publishers.
type Handover struct {
	// Takeover says who may take a busy path over; the old connection is
	// then closed. Anyone else is refused as busy.
	Takeover Takeover
	// Credentialed: publishing on the path needs credentials (or an auth
	// hook's yes), so whoever got this far is entitled to the path.
	Credentialed bool
	// Grace is how long the path's viewers wait for the next publisher
	// after one leaves; 0 closes them with it.
	Grace time.Duration
}

// Takeover is who may take a busy path over from its live publisher.
type Takeover int

// The takeover rules (config's overridePublisher false, true and any).
const (
	// TakeoverNever refuses every new publisher while one streams.
	TakeoverNever Takeover = iota
	// TakeoverEntitled lets in a publisher that presented the path's
	// credentials, and on a path without any only one from the live
	// publisher's IP address: an encoder reconnecting after a blip comes
	// from there, a stranger who guessed the path name does not.
	TakeoverEntitled
	// TakeoverAny lets anyone who may publish take the path over.
	TakeoverAny
)

// DefaultHandover is used when Config.Handover is nil: the config's
// pathDefaults (overridePublisher: true, publisherGrace: 15s).
var DefaultHandover = Handover{Takeover: TakeoverEntitled, Grace: 15 * time.Second}

// mayTakeOver says whether a publisher from remote may take path over
// from old under ho, and if not why and how to allow it.
func mayTakeOver(ho Handover, path, remote string, old *publisher) error {
	switch {
	case ho.Takeover == TakeoverAny, ho.Takeover == TakeoverEntitled && ho.Credentialed:
		return nil
	case ho.Takeover == TakeoverNever:
		return fmt.Errorf("%w: %q has a live publisher and overridePublisher is false; stop it first, or set overridePublisher: true", hub.ErrPathBusy, path)
	}
	live := hostOf(old.conn.Remote())
	if live.IsValid() && live == hostOf(remote) {
		return nil
	}
	return fmt.Errorf("%w: %q is published from %s and has no publish credentials, so only that address may take it over; "+
		"set overridePublisher: any to let anyone, or publishUser/publishPass to let whoever has them", hub.ErrPathBusy, path, live)
}

// hostOf is the IP address of a HOST:PORT remote, the zero Addr when it
// has none.
func hostOf(remote string) netip.Addr {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// rule is ho as it applies against old: a live publisher that has sent
// no media for the stall time holds its path only against those not
// entitled to it, even where overridePublisher is false (connwatch.go).
func (m *Manager) rule(ho Handover, old *publisher) Handover {
	if ho.Takeover == TakeoverNever && m.stalled(old, time.Now()) {
		ho.Takeover = TakeoverEntitled
	}
	return ho
}

// replacedReason is the old publisher's end reason in the log.
const replacedReason = "replaced by a new publisher"

// errReplaced ends a publisher that lost its path to a newer one before it
// had claimed it (during its hook call).
var errReplaced = errors.New(replacedReason)

func (m *Manager) handover(path string) Handover {
	if m.cfg.Handover == nil {
		return DefaultHandover
	}
	return m.cfg.Handover(path)
}

// claim makes p the path's publisher in this manager and in the hub, in
// one step under the manager's lock, so two publishers taking a path over
// at the same moment cannot each end up deposing the other: the later
// claim wins and the earlier one is closed. The connections still pending
// on the path are closed too (reasonSuperseded). The hub call under the lock is
// short (it never waits on viewers), and the SRT listen callback only ever
// takes the lock for a map lookup.
func (m *Manager) claim(path string, p *publisher) (*hub.Publisher, error) {
	ho := m.handover(path)
	m.mu.Lock()
	if p.replaced {
		m.mu.Unlock()
		return nil, errReplaced
	}
	old := m.live[path]
	if old != nil {
		ho = m.rule(ho, old)
		if err := mayTakeOver(ho, path, p.conn.Remote(), old); err != nil {
			m.mu.Unlock()
			return nil, err
		}
	}
	// The rule was applied above, against this manager's own record of
	// the live publisher; the hub only needs to know whether to let go.
	pub, err := m.cfg.Hub.PublishWith(path, p.conn.Remote(), hub.PublishOptions{Override: ho.Takeover != TakeoverNever, Grace: ho.Grace})
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	m.live[path] = p
	if old != nil {
		old.replaced = true
	}
	m.dropPendingLocked(path, p)
	superseded := m.pending[path]
	delete(m.pending, path)
	for _, q := range superseded {
		q.replaced = true
	}
	m.mu.Unlock()
	if old != nil {
		m.log.Info("publisher takes the path over", "path", path, "remote", p.conn.Remote(), "previous", old.conn.Remote())
		old.conn.CloseWith(replacedReason)
	}
	for _, q := range superseded {
		m.log.Info("pending publisher closed: another claimed the path", "path", path, "remote", q.conn.Remote(), "claimed_by", p.conn.Remote())
		q.conn.CloseWith(reasonSuperseded)
	}
	return pub, nil
}
