package main

import "github.com/srtwhep/srtwhep/pkg/whep"

// whepLayers is the WHEP server as the layer selection asks for it; s.whep
// is made after the extension, which reaches it through s.
type whepLayers struct{ s *server }

func (w whepLayers) Layers(path, id string) (whep.LayerState, bool) { return w.s.whep.Layers(path, id) }
func (w whepLayers) PinLayer(path, id, layer string) (bool, error) {
	return w.s.whep.PinLayer(path, id, layer)
}
func (w whepLayers) LayerMedia(path, id string) (string, bool) { return w.s.whep.LayerMedia(path, id) }
