package whep

import "strconv"

// LayerMedia is the mediaId of session id's video in the layer extension:
// the index of the video m-line in the viewer's offer, which the layers
// event is keyed by and a pin may name. False when path has no such
// session.
func (s *Server) LayerMedia(path, id string) (string, bool) {
	sess := s.lookupSession(id)
	if sess == nil || sess.path != path {
		return "", false
	}
	// An ICE restart replaces the offer, never its m-lines.
	sess.sigMu.Lock()
	defer sess.sigMu.Unlock()
	return strconv.Itoa(sess.offer.Video), true
}
