package ingest

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/vtranscode"
)

// A path's ladder (config's renditions): lower renditions of an H.264
// path that passes through, for viewers whose link cannot carry the
// source. Each rung is a hub path of its own, written by a transcoder
// that runs while a viewer reads it and LadderLinger after the last one
// left (rung.go); viewers move between the source and the rungs at IDRs
// (pkg/abr).

// Rendition is one rung the config asks for.
type Rendition struct {
	Height  int // picture height; the width follows the source's aspect ratio
	Bitrate int // bit/s
}

// LadderSettings is a path's renditions key.
type LadderSettings struct {
	// Off: no ladder. Otherwise Steps, or with none the automatic ladder
	// (AutoLadder) for the source.
	Off   bool
	Steps []Rendition
	// Linger is how long a rung's transcoder runs on after its last
	// viewer left (timed by the stream's PTS); 0 means
	// DefaultLadderLinger.
	Linger time.Duration
}

// DefaultLadderLinger keeps a rung through a viewer's probe of the rung
// above (it comes back if the probe fails) and a page reload.
const DefaultLadderLinger = 30 * time.Second

// minRungBitrate: below it a rung shows mostly blocks.
const minRungBitrate = 200_000

// AutoLadder is the default ladder of a w×h source at bitrate bit/s: one
// rung at half the height, and for sources of 1080 lines or more a
// second at a third; each gets the source's bitrate scaled by its share
// of the pixels, with a tenth more because small pictures code less
// efficiently (720p at 2.5 Mbit/s: 640x360 at 690 kbit/s). A source of
// less than 480 lines gets none: half of it is not worth watching.
func AutoLadder(h, bitrate int) []Rendition {
	if h < 480 || bitrate <= 0 {
		return nil
	}
	heights := []int{even(h / 2)}
	if h >= 1080 {
		heights = append(heights, even(h/3))
	}
	out := make([]Rendition, 0, len(heights))
	for _, rh := range heights {
		share := float64(rh) / float64(h)
		out = append(out, Rendition{Height: rh, Bitrate: max(minRungBitrate, int(math.Round(float64(bitrate)*share*share*1.1/1000))*1000)})
	}
	return out
}

func even(n int) int { return n &^ 1 }

// planLadder is the ladder the path gets for its stream: the rungs below
// the source's height (an explicit rung at or above it is pointless and
// left out), top first, each named by its height.
func planLadder(s LadderSettings, info av.StreamInfo, bitrate int) []hub.Rung {
	if s.Off || info.Height == 0 {
		return nil
	}
	steps := slices.Clone(s.Steps)
	if len(steps) == 0 {
		steps = AutoLadder(info.Height, bitrate)
	}
	slices.SortFunc(steps, func(a, b Rendition) int { return cmp.Compare(b.Height, a.Height) })
	out := []hub.Rung{{ID: hub.SourceRung, Width: info.Width, Height: info.Height, Bitrate: bitrate}}
	for _, st := range steps {
		if st.Height >= info.Height || st.Height <= 0 {
			continue
		}
		w, h := vtranscode.OutputSize(info.Width, info.Height, st.Height)
		id := fmt.Sprintf("%dp", h)
		if dup := func() bool {
			for _, r := range out {
				if r.ID == id {
					return true
				}
			}
			return false
		}(); dup {
			continue
		}
		out = append(out, hub.Rung{ID: id, Width: w, Height: h, Bitrate: st.Bitrate})
	}
	if len(out) == 1 {
		return nil
	}
	return out
}
