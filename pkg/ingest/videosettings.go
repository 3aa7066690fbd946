package ingest

// What a path does with its publisher's video (config's video key and
// transcode section), as the manager hands it to each path's pipeline.

import (
	"time"

	"github.com/srtwhep/srtwhep/pkg/cpubudget"
)

// The values of VideoSettings.Mode (config's video key).
const (
	VideoAuto        = "auto"
	VideoPassthrough = "passthrough"
	VideoTranscode   = "transcode"
)

// VideoSettings say what a path does with its publisher's video.
type VideoSettings struct {
	Mode string // VideoAuto ("" too), VideoPassthrough or VideoTranscode
	// MaxKeyframeInterval is the longest GOP auto passes through; 0 means
	// DefaultMaxKeyframeInterval.
	MaxKeyframeInterval time.Duration
	// Linger is how long the transcoder runs on without a reader of the
	// path (timed by the stream's PTS); 0 means DefaultLinger.
	Linger time.Duration
	// Ladder is the path's lower renditions (ladder.go), for an H.264
	// path that passes through.
	Ladder LadderSettings
}

// TranscodeLimits bound every video transcode the server runs (config's
// transcode section), whichever path it serves.
type TranscodeLimits struct {
	// Budget is the server's one transcode CPU budget: a transcoder
	// reserves its estimated cost before it starts and holds its measured
	// cost while it runs; one that does not fit is refused. nil: none.
	Budget *cpubudget.Budget
	// MaxHeight and MaxFPS cap the output (0: the source's).
	MaxHeight int
	MaxFPS    float64
	// MaxDecodeArea refuses sources of more pixels a picture (0: none).
	MaxDecodeArea int
}

const (
	// DefaultMaxKeyframeInterval: past it a joining viewer waits longer
	// for a picture than most people wait before reloading.
	DefaultMaxKeyframeInterval = 4 * time.Second
	// DefaultLinger keeps the transcoder through a page reload, and
	// stops paying for it soon after the last viewer left.
	DefaultLinger = 30 * time.Second
)
