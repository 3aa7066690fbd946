package whep

import (
	"errors"
	"fmt"

	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

// A session keeps the viewer's offer as pkg/sdpoffer's one model, its
// video fitted to the path's stream (sdpoffer.Offer.ForStream): the plane
// answers from it (plane.Offer.Model, plane.VideoCodec), the sender reads
// its payload types, and an ICE restart replaces it with a copy that
// carries the viewer's new credentials (WithICE).

// transcodedReader swaps orig, whose video the viewer cannot take
// (codecErr), for a reader of the path's H.264 rendition when the path
// has one. Otherwise orig is closed and codecErr returned: the viewer is
// refused with it, unless only a reader cap stands in the way
// (atReaderCap: the hub's error, for a 503).
func (s *Server) transcodedReader(path, id string, model *sdpoffer.Offer, orig Reader, codecErr error) (Reader, *sdpoffer.Offer, error) {
	ts := s.cfg.Source
	alt, err := ts.AddTranscodedReader(path, id)
	if atReaderCap(err) {
		// The reader cap counts both renditions' readers, orig among
		// them: at the cap it holds the very slot alt needs. Give it
		// back and ask again; the path's other readers keep its pull.
		orig.Close()
		orig = nil
		alt, err = ts.AddTranscodedReader(path, id)
	}
	// Released only now, so the path cannot lose its last reader (and
	// an edge its pull) in between.
	if orig != nil {
		orig.Close()
	}
	switch {
	case atReaderCap(err):
		return nil, nil, err // the viewer could play it: a 503, not a 409
	case err != nil:
		return nil, nil, withoutRendition(codecErr, err)
	}
	o, err := model.ForStream(alt.Info())
	if err != nil {
		alt.Close()
		return nil, nil, codecErr
	}
	return alt, o, nil
}

// withoutRendition adds the operator's fix to the refusal of a viewer
// without H.265 on an H.265 path that makes no H.264 rendition: on such a
// path ingest makes one unless the path passes video through, so the
// setting to change is known, and it is the one fix that serves every
// browser without touching the encoder.
func withoutRendition(codecErr, renditionErr error) error {
	var ce *sdpoffer.CodecError
	if !errors.As(codecErr, &ce) || !ce.H265 || !errors.Is(renditionErr, hub.ErrNoPublisher) {
		return codecErr
	}
	return fmt.Errorf("%w. This path passes video through (video: passthrough): "+
		"the operator can set video: auto for it, and the server converts H.265 to H.264 for browsers like this one", codecErr)
}

// atReaderCap reports whether err is the hub's path or server reader cap.
func atReaderCap(err error) bool {
	return errors.Is(err, hub.ErrPathFull) || errors.Is(err, hub.ErrServerFull)
}
