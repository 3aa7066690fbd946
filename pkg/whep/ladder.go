package whep

import (
	"fmt"

	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/ladder"
	"github.com/srtwhep/srtwhep/pkg/rtpsend"
)

// LadderSource gives the renditions of the paths' video (*hub.Hub).
type LadderSource interface {
	// Ladder is path's rungs, the source first; nil: none.
	Ladder(path string) []hub.Rung
	// AddLadderReader reads rung id of path for viewer session.
	AddLadderReader(path, id, session string) (*hub.Reader, error)
	// RequestLadderIDR asks rung id of path for an IDR after PTS after.
	RequestLadderIDR(path, id string, after int64)
}

// Switches counts every viewer's moves between renditions, for the
// metrics (srtwhep_rendition_switches_total).
func (s *Server) Switches() (up, down uint64) {
	return s.switches.Up.Load(), s.switches.Down.Load()
}

// sessionLadder is a session's switch with the layer extension's view of
// it.
type sessionLadder struct {
	*ladder.Switch
	rungs []hub.Rung
}

// ladderSource is what the session's sender reads: its reader, or, on a
// path with renditions, a switch over the reader and the rungs.
func (s *Server) ladderSource(sess *session) rtpsend.Source {
	if s.cfg.Ladder == nil {
		return sess.reader
	}
	rungs := s.cfg.Ladder.Ladder(sess.path)
	if len(rungs) < 2 {
		return sess.reader
	}
	lad, path, id := s.cfg.Ladder, sess.path, sess.id
	sw := ladder.New(ladder.Config{
		Main:  sess.reader,
		Rungs: rungs,
		Open: func(rung string) (ladder.RungReader, error) {
			r, err := lad.AddLadderReader(path, rung, id)
			if err != nil {
				return nil, err
			}
			return r, nil
		},
		RequestIDR: func(rung string, after int64) { lad.RequestLadderIDR(path, rung, after) },
		Switches:   &s.switches,
		Log:        sess.log,
	})
	sl := &sessionLadder{Switch: sw, rungs: rungs}
	sess.sw.Store(sl)
	return sw
}

// Layers is the layer extension's view of the switch.
func (sl *sessionLadder) Layers() LayerState {
	active, pinned := sl.Switch.State()
	st := LayerState{Layers: make([]Layer, len(sl.rungs)), Active: sl.rungs[active].ID}
	for i, r := range sl.rungs {
		st.Layers[i] = Layer{ID: r.ID, Width: r.Width, Height: r.Height, Bitrate: r.Bitrate}
	}
	if pinned >= 0 {
		st.Pinned = sl.rungs[pinned].ID
	}
	return st
}

// Pin pins the viewer to layer id; "" lets its estimate choose again.
func (sl *sessionLadder) Pin(id string) error {
	if id == "" {
		sl.Switch.Pin(-1)
		return nil
	}
	for i, r := range sl.rungs {
		if r.ID == id {
			sl.Switch.Pin(i)
			return nil
		}
	}
	ids := make([]string, len(sl.rungs))
	for i, r := range sl.rungs {
		ids[i] = r.ID
	}
	return fmt.Errorf("%w %q: this path has %q", ErrUnknownLayer, id, ids)
}
