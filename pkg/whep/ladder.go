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
	reader Reader
}

// ladderSource is what the session's sender reads: with renditions
// configured (Config.Ladder), a switch over its reader and its path's
// rungs, which stays on the source while the path has none (its ladder
// is planned at the end of the stream's first GOP, and a path whose
// video is transcoded whole has none).
func (s *Server) ladderSource(sess *session) rtpsend.Source {
	if s.cfg.Ladder == nil {
		return sess.reader
	}
	lad, path, id := s.cfg.Ladder, sess.path, sess.id
	sw := ladder.New(ladder.Config{
		Main:    sess.reader,
		Rungs:   lad.Ladder(path),
		Refresh: func() []hub.Rung { return lad.Ladder(path) },
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
	sess.sw.Store(&sessionLadder{Switch: sw, reader: sess.reader})
	return sw
}

// Layers is the layer extension's view of the switch.
func (sl *sessionLadder) Layers() LayerState {
	rungs, active, pinned := sl.Switch.State()
	if len(rungs) < 2 {
		info := sl.reader.Info()
		return LayerState{Layers: []Layer{{ID: SourceLayer, Width: info.Width, Height: info.Height}}, Active: SourceLayer}
	}
	st := LayerState{Layers: make([]Layer, len(rungs)), Active: rungs[active].ID}
	for i, r := range rungs {
		st.Layers[i] = Layer{ID: r.ID, Width: r.Width, Height: r.Height, Bitrate: r.Bitrate}
	}
	if pinned >= 0 {
		st.Pinned = rungs[pinned].ID
	}
	return st
}

// Pin pins the viewer to layer id; "" lets its estimate choose again.
func (sl *sessionLadder) Pin(id string) error {
	if id == "" {
		sl.Switch.Pin(-1)
		return nil
	}
	rungs, _, _ := sl.Switch.State()
	ids := make([]string, len(rungs))
	for i, r := range rungs {
		if r.ID == id {
			sl.Switch.Pin(i)
			return nil
		}
		ids[i] = r.ID
	}
	if len(rungs) < 2 {
		if id == SourceLayer {
			return nil
		}
		return fmt.Errorf("%w %q: this path has only %q", ErrUnknownLayer, id, SourceLayer)
	}
	return fmt.Errorf("%w %q: this path has %q", ErrUnknownLayer, id, ids)
}
