package audio

// #cgo pkg-config: libavutil
// #include <libavutil/frame.h>
import "C"

import (
	"unsafe"

	"github.com/asticode/go-astiav"
)

// interleavedFloats views the samples of a packed float (AV_SAMPLE_FMT_FLT)
// frame without copying. astiav v0.16's FrameData cannot read audio, hence
// this look into the AVFrame. The slice aliases C memory: it is valid only
// until the frame is unreferenced, so it must not escape the caller.
func interleavedFloats(f *astiav.Frame) []float32 {
	c := (*C.AVFrame)(f.UnsafePointer())
	n := int(c.nb_samples) * int(c.ch_layout.nb_channels)
	if n <= 0 || c.data[0] == nil {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(c.data[0])), n)
}
