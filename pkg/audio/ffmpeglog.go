package audio

import (
	"sync"

	"github.com/asticode/go-astiav"
)

var quietOnce sync.Once

// silenceFFmpeg stops FFmpeg's own logging, process-wide. By default it
// prints to stderr, bypassing slog, once per damaged frame. Routing it
// into slog instead would need astiav's log callback, which in v0.16
// formats every message with vsprintf into a 1024-byte stack buffer: a
// long message would overflow it. What matters is not lost: every FFmpeg
// failure also comes back as an error code, which the Transcoder counts
// and summarises with the error text.
func silenceFFmpeg() {
	quietOnce.Do(func() { astiav.SetLogLevel(astiav.LogLevelQuiet) })
}
