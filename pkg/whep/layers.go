package whep

import (
	"errors"
	"fmt"
)

// The layer extension of WHEP (WHEP Core Extensions) lets a player see the
// renditions of its path's video and pin one; this file is its contract
// with the session. The HTTP side and the `layers` event live with the
// extension; which rendition a viewer gets is the session's sender's
// business (its bandwidth estimate, or the pin).

// SourceLayer is the ID of the top of every ladder: the path's video as
// published (or its H.264 transcode, for a viewer that cannot take the
// original).
const SourceLayer = "source"

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

// layerSwitch is what a session whose path has a ladder switches with.
// nil when the path has a single layer: then the source is all there is.
type layerSwitch interface {
	Layers() LayerState
	Pin(id string) error // "" hands the choice back to the estimator
}

// Layers is session id's ladder on path; false when path has no such
// session.
func (s *Server) Layers(path, id string) (LayerState, bool) {
	sess := s.lookupSession(id)
	if sess == nil || sess.path != path {
		return LayerState{}, false
	}
	if sw := sess.layerSwitch(); sw != nil {
		return sw.Layers(), true
	}
	info := sess.reader.Info()
	return LayerState{
		Layers: []Layer{{ID: SourceLayer, Width: info.Width, Height: info.Height}},
		Active: SourceLayer,
	}, true
}

// PinLayer pins session id on path to layer (or, with "", lets its
// bandwidth estimate choose again). ErrUnknownLayer names what the
// ladder has; false when path has no such session.
func (s *Server) PinLayer(path, id, layer string) (bool, error) {
	sess := s.lookupSession(id)
	if sess == nil || sess.path != path {
		return false, nil
	}
	if sw := sess.layerSwitch(); sw != nil {
		return true, sw.Pin(layer)
	}
	if layer != "" && layer != SourceLayer {
		return true, fmt.Errorf("%w %q: this path has only %q", ErrUnknownLayer, layer, SourceLayer)
	}
	return true, nil
}

// layerSwitch is the session's switch between renditions, nil while its
// path has only one.
func (sess *session) layerSwitch() layerSwitch {
	if sw := sess.sw.Load(); sw != nil {
		return sw
	}
	return nil
}
