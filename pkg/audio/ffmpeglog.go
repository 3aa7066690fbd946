package audio

// #cgo pkg-config: libavutil
// #include <libavutil/log.h>
import "C"

import "sync"

var quietOnce sync.Once

// silenceFFmpeg stops FFmpeg's own logging, process-wide. By default it
// prints to stderr, bypassing slog, once per damaged frame. Routing it
// into slog would need a C callback formatting varargs for little gain:
// every FFmpeg failure also comes back as an error code, which the
// Transcoder counts and summarises with the error text.
func silenceFFmpeg() {
	quietOnce.Do(func() { C.av_log_set_level(C.AV_LOG_QUIET) })
}
