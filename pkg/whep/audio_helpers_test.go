package whep

import (
	"context"

	"github.com/srtwhep/srtwhep/pkg/hub"
)

// The video-only test source never has audio: AttachAV is Attach and
// RecvFrame carries video alone. Audio tests use the real hub (HubSource).

func (r *testReader) HasAudio() bool { return false }

func (r *testReader) AttachAV() { r.Attach() }

func (r *testReader) RecvFrame(ctx context.Context) (hub.Frame, error) {
	au, catchUp, err := r.Recv(ctx)
	if err != nil {
		return hub.Frame{}, err
	}
	return hub.Frame{Video: au, CatchUp: catchUp}, nil
}
