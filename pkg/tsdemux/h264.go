package tsdemux

import (
	"fmt"
	"strings"

	"github.com/bluenviron/mediacommon/v2/pkg/bits"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"
)

// sliceHeader holds the leading slice-header fields this package needs.
type sliceHeader struct {
	refIdc      uint8
	sliceType   uint32
	frameNum    uint32
	maxFrameNum uint32
}

// isB reports a B slice (slice_type 1 or 6).
func (h sliceHeader) isB() bool { return h.sliceType%5 == 1 }

// sliceHeaderBytes covers first_mb_in_slice, slice_type,
// pic_parameter_set_id (three Exp-Golomb codes of at most 65 bits), the
// colour plane and a frame_num of at most 16 bits, with room for
// emulation-prevention bytes.
const sliceHeaderBytes = 40

// parseSliceHeader reads the start of a slice (H.264 7.3.3).
func parseSliceHeader(nalu []byte, sps *h264.SPS) (sliceHeader, error) {
	if len(nalu) < 2 {
		return sliceHeader{}, fmt.Errorf("slice NAL unit of %d bytes", len(nalu))
	}
	h := sliceHeader{refIdc: (nalu[0] >> 5) & 3}
	buf := h264.EmulationPreventionRemove(nalu[1:min(len(nalu), 1+sliceHeaderBytes)])
	pos := 0
	if _, err := bits.ReadGolombUnsigned(buf, &pos); err != nil { // first_mb_in_slice
		return h, err
	}
	st, err := bits.ReadGolombUnsigned(buf, &pos)
	if err != nil {
		return h, err
	}
	if st > 9 {
		return h, fmt.Errorf("invalid slice_type %d", st)
	}
	h.sliceType = st
	if _, err = bits.ReadGolombUnsigned(buf, &pos); err != nil { // pic_parameter_set_id
		return h, err
	}
	if sps.SeparateColourPlaneFlag {
		if _, err = bits.ReadBits(buf, &pos, 2); err != nil { // colour_plane_id
			return h, err
		}
	}
	n := int(sps.Log2MaxFrameNumMinus4) + 4
	fn, err := bits.ReadBits(buf, &pos, n)
	if err != nil {
		return h, err
	}
	h.frameNum = uint32(fn)
	h.maxFrameNum = 1 << n
	return h, nil
}

// profileName names an H.264 profile as browsers and ffprobe do.
func profileName(sps *h264.SPS) string {
	switch sps.ProfileIdc {
	case 66:
		if sps.ConstraintSet1Flag {
			return "Constrained Baseline"
		}
		return "Baseline"
	case 77:
		return "Main"
	case 88:
		return "Extended"
	case 100:
		switch {
		case sps.ConstraintSet4Flag && sps.ConstraintSet5Flag:
			return "Constrained High"
		case sps.ConstraintSet4Flag:
			return "Progressive High"
		}
		return "High"
	case 110:
		if sps.ConstraintSet3Flag {
			return "High 10 Intra"
		}
		return "High 10"
	case 122:
		return "High 4:2:2"
	case 244:
		return "High 4:4:4 Predictive"
	case 44:
		return "CAVLC 4:4:4 Intra"
	}
	return fmt.Sprintf("profile_idc %d", sps.ProfileIdc)
}

// codecName names a track's codec for logs and error messages.
func codecName(c mpegts.Codec) string {
	switch c.(type) {
	case *mpegts.CodecH264:
		return "H264"
	case *mpegts.CodecH265:
		return "H265"
	case *mpegts.CodecMPEG4Video:
		return "MPEG-4 Video"
	case *mpegts.CodecMPEG1Video:
		return "MPEG-1/2 Video"
	case *mpegts.CodecOpus:
		return "Opus"
	case *mpegts.CodecMPEG4Audio:
		return "MPEG-4 Audio (AAC)"
	case *mpegts.CodecMPEG4AudioLATM:
		return "MPEG-4 Audio LATM (AAC)"
	case *mpegts.CodecMPEG1Audio:
		return "MPEG-1 Audio (MP2/MP3)"
	case *mpegts.CodecAC3:
		return "AC-3"
	case *mpegts.CodecKLV:
		return "KLV"
	case *mpegts.CodecDVBSubtitle:
		return "DVB Subtitle"
	case nil:
		return "unknown"
	default:
		return "unsupported"
	}
}

func joinOr(s []string, empty string) string {
	if len(s) == 0 {
		return empty
	}
	return strings.Join(s, ", ")
}
