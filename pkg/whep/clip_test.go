package whep

import (
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit/h264clip"
	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

func makeClip(t *testing.T, frames, gop int) []*av.AccessUnit { return h264clip.Make(t, frames, gop) }

func feedHub(t *testing.T, pub *hub.Publisher, clip []*av.AccessUnit) (stop func()) {
	return h264clip.Feed(t, pub, clip)
}
