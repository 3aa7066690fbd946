package ingest

// maxGated bounds what a gate holds: about 16 pictures and the audio
// between them, or a few seconds of audio from a stream whose video never
// starts; past it the gate opens, as for a stream that proved playable.
const maxGated = 256

// gate holds a publisher's media back from the hub until its stream
// proved playable (provenAfter pictures from its first IDR), when the
// path's viewers are waiting out a grace period for the next publisher
// and the path passes video through: an encoder with the wrong settings,
// refused at its first B slice, would otherwise hand them its first
// pictures and bounce them to a new stream on every reconnect. Video: auto
// refuses nothing there (it transcodes), so it is never gated. It runs on
// the demuxer's goroutine, like every callback it holds.
type gate struct {
	held []func()
	open bool
}

// newGate returns the gate for a publisher of path, nil when its media
// need not wait.
func (m *Manager) newGate(path, mode string) *gate {
	if mode != VideoPassthrough {
		return nil
	}
	st := m.cfg.Hub.State(path)
	if st.Publisher || st.Readers == 0 {
		return nil
	}
	return &gate{}
}

// hold keeps f for later and reports true, or reports false when f is to
// run now (no gate, or it is open).
func (g *gate) hold(f func()) bool {
	if g == nil || g.open {
		return false
	}
	g.held = append(g.held, f)
	if len(g.held) >= maxGated {
		g.release()
	}
	return true
}

// release opens the gate and runs what it held, in order.
func (g *gate) release() {
	if g == nil || g.open {
		return
	}
	g.open = true
	held := g.held
	g.held = nil
	for _, f := range held {
		f()
	}
}
