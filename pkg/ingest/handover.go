package ingest

import (
	"errors"
	"time"

	"github.com/srtwhep/srtwhep/pkg/hub"
)

// Handover says how a path changes hands between publishers.
type Handover struct {
	// Override: a new publisher takes a busy path over and the old
	// connection is closed; false refuses the new one as busy.
	Override bool
	// Grace is how long the path's viewers wait for the next publisher
	// after one leaves; 0 closes them with it.
	Grace time.Duration
}

// DefaultHandover is used when Config.Handover is nil: the config's
// pathDefaults (overridePublisher: true, publisherGrace: 15s).
var DefaultHandover = Handover{Override: true, Grace: 15 * time.Second}

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
// claim wins and the earlier one is closed. The hub call under the lock is
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
	if old == p {
		old = nil
	}
	if old != nil && !ho.Override {
		m.mu.Unlock()
		return nil, hub.ErrPathBusy
	}
	pub, err := m.cfg.Hub.PublishWith(path, p.conn.Remote(), hub.PublishOptions{Override: ho.Override, Grace: ho.Grace})
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	m.live[path] = p
	if old != nil {
		old.replaced = true
	}
	m.mu.Unlock()
	if old != nil {
		m.log.Info("publisher takes the path over", "path", path, "remote", p.conn.Remote(), "previous", old.conn.Remote())
		old.conn.CloseWith(replacedReason)
	}
	return pub, nil
}
