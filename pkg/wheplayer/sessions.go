package wheplayer

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/srtwhep/srtwhep/pkg/abr"
	"github.com/srtwhep/srtwhep/pkg/bwe"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/rtpsend"
	"github.com/srtwhep/srtwhep/pkg/whep"
)

// The session side of the extension: every WHEP session's switch between
// its path's renditions (pkg/abr), made as the session is made
// (whep.Config.SenderSource: Source) and forgotten at its end
// (SessionEnded), so the table holds the sessions that exist and no
// more. Which rendition a viewer gets is its switch's business (its
// bandwidth estimate, or the pin); this is where the HTTP side reads and
// pins it.

// SourceLayer is the ID of the top of every ladder: the path's video as
// published (or its H.264 transcode, for a viewer that cannot take the
// original).
const SourceLayer = hub.SourceRung

// Layer is one rendition of a path's video a viewer can be given.
type Layer struct {
	ID      string `json:"id"` // SourceLayer, or a rendition's name such as "360p"
	Width   int    `json:"width,omitempty"`
	Height  int    `json:"height,omitempty"`
	Bitrate int    `json:"bitrate,omitempty"` // bits per second it needs, nominal; 0 when unknown
}

// LayerState is one session's ladder and where it stands on it.
type LayerState struct {
	Layers []Layer // top (SourceLayer) first, then smaller
	Active string  // ID of the layer the viewer is sent now
	Pinned string  // ID the player pinned; "" while the estimator chooses
}

// ErrUnknownLayer: a pin names a layer the path's ladder does not have.
var ErrUnknownLayer = errors.New("no such layer")

// Renditions gives the renditions of the paths' video (*hub.Hub).
type Renditions interface {
	// Ladder is path's rungs, the source first; nil: none.
	Ladder(path string) []hub.Rung
	// AddLadderReader reads rung id of path for viewer session.
	AddLadderReader(path, id, session string) (*hub.Reader, error)
	// RequestLadderIDR asks rung id of path for an IDR after PTS after.
	RequestLadderIDR(path, id string, after int64)
}

// session is one WHEP session as the extension knows it.
type session struct {
	path   string
	reader whep.Reader
	media  string // the layer extension's mediaId: the video m-line's index
	sw     *abr.Switch
}

// Source is whep.Config.SenderSource: session v's switch, which its
// sender reads. The switch stays on the source while the path has no
// ladder (it is planned at the end of the stream's first GOP, and a path
// whose video is transcoded whole has none).
func (l *Layers) Source(v whep.Viewer) whep.SenderSource {
	sess := &session{path: v.Path, reader: v.Reader, media: strconv.Itoa(v.VideoMedia)}
	if r := l.cfg.Renditions; r != nil {
		path, id := v.Path, v.ID
		sess.sw = abr.New(abr.Config{
			Main:    v.Reader,
			Rungs:   r.Ladder(path),
			Refresh: func() []hub.Rung { return r.Ladder(path) },
			Open: func(rung string) (abr.RungReader, error) {
				rd, err := r.AddLadderReader(path, rung, id)
				if err != nil {
					return nil, err
				}
				return rd, nil
			},
			RequestIDR: func(rung string, after int64) { r.RequestLadderIDR(path, rung, after) },
			Switches:   &l.switches,
			Log:        v.Log,
		})
	}
	l.mu.Lock()
	l.sessions[v.ID] = sess
	l.mu.Unlock()
	if sess.sw == nil {
		return nil
	}
	return switchSource{sess.sw}
}

// switchSource is a switch as a session's sender source.
type switchSource struct{ *abr.Switch }

// SenderStarted gives the switch the sender's estimate and probes.
func (s switchSource) SenderStarted(snd *rtpsend.Sender) {
	s.SetEstimate(func() (bwe.Estimate, time.Time) { return snd.Estimate(), snd.Started() })
	s.SetProber(snd)
}

// SessionEnded forgets session id (whep.Extension); whep has closed its
// switch.
func (l *Layers) SessionEnded(id string) {
	l.mu.Lock()
	delete(l.sessions, id)
	l.mu.Unlock()
}

// Switches counts every viewer's moves between renditions, for the
// metrics (srtwhep_rendition_switches_total).
func (l *Layers) Switches() (up, down uint64) {
	return l.switches.Up.Load(), l.switches.Down.Load()
}

func (l *Layers) lookup(path, id string) *session {
	l.mu.Lock()
	defer l.mu.Unlock()
	if sess := l.sessions[id]; sess != nil && sess.path == path {
		return sess
	}
	return nil
}

// state is session id's ladder on path; false when path has no such
// session.
func (l *Layers) state(path, id string) (LayerState, bool) {
	sess := l.lookup(path, id)
	if sess == nil {
		return LayerState{}, false
	}
	var rungs []hub.Rung
	active, pinned := 0, -1
	if sess.sw != nil {
		rungs, active, pinned = sess.sw.State()
	}
	if len(rungs) < 2 {
		info := sess.reader.Info()
		return LayerState{Layers: []Layer{{ID: SourceLayer, Width: info.Width, Height: info.Height}}, Active: SourceLayer}, true
	}
	st := LayerState{Layers: make([]Layer, len(rungs)), Active: rungs[active].ID}
	for i, r := range rungs {
		st.Layers[i] = Layer{ID: r.ID, Width: r.Width, Height: r.Height, Bitrate: r.Bitrate}
	}
	if pinned >= 0 {
		st.Pinned = rungs[pinned].ID
	}
	return st, true
}

// pin pins session id on path to layer (or, with "", lets its bandwidth
// estimate choose again). ErrUnknownLayer names what the ladder has;
// false when path has no such session.
func (l *Layers) pin(path, id, layer string) (bool, error) {
	sess := l.lookup(path, id)
	if sess == nil {
		return false, nil
	}
	var rungs []hub.Rung
	if sess.sw != nil {
		rungs, _, _ = sess.sw.State()
	}
	if layer == "" {
		if sess.sw != nil {
			sess.sw.Pin(-1)
		}
		return true, nil
	}
	ids := make([]string, len(rungs))
	for i, r := range rungs {
		if r.ID == layer {
			sess.sw.Pin(i)
			return true, nil
		}
		ids[i] = r.ID
	}
	if len(rungs) < 2 {
		if layer == SourceLayer {
			return true, nil
		}
		return true, fmt.Errorf("%w %q: this path has only %q", ErrUnknownLayer, layer, SourceLayer)
	}
	return true, fmt.Errorf("%w %q: this path has %q", ErrUnknownLayer, layer, ids)
}

// media is the mediaId of session id's video in the layer extension: the
// index of the video m-line in the viewer's offer, which the layers event
// is keyed by and a pin may name. False when path has no such session.
func (l *Layers) media(path, id string) (string, bool) {
	sess := l.lookup(path, id)
	if sess == nil {
		return "", false
	}
	return sess.media, true
}
