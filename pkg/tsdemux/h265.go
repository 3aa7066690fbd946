package tsdemux

import (
	"bytes"
	"fmt"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h265"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// h265Type is the nal_unit_type of an H.265 NAL unit (H.265 7.3.1.2).
func h265Type(n []byte) h265.NALUType { return h265.NALUType((n[0] >> 1) & 0x3f) }

// isIRAP: a decoder can start at BLA, IDR and CRA pictures (types 16-23,
// H.265 Table 7-1); the reserved IRAP types are included so a future
// encoder's keyframes are not held back.
func isIRAP(t h265.NALUType) bool {
	return t >= h265.NALUType_BLA_W_LP && t <= h265.NALUType_RSV_IRAP_VCL23
}

// onAccessUnitH265 handles one H.265 access unit from mediacommon. There
// is no frame_num in H.265, so loss of a reference picture is not
// detected here (POC gaps are legal); only PTS reordering reveals
// B-frames, as DTS≠PTS does for H.264.
func (d *Demuxer) onAccessUnitH265(rawPTS, rawDTS int64, au [][]byte, emit func(*av.AccessUnit) error) error {
	v := &d.video
	d.maybeSummarise()

	nalus := make([][]byte, 0, len(au)+3)
	var irap, vcl bool
	size := 0
	for _, n := range au {
		if len(n) < 2 {
			continue // not even a NAL unit header
		}
		switch t := h265Type(n); {
		case t == h265.NALUType_AUD_NUT || t == h265.NALUType_FD_NUT:
			continue // useless to a WebRTC decoder, only costs bandwidth
		case t == h265.NALUType_VPS_NUT:
			v.vps = n
		case t == h265.NALUType_SPS_NUT:
			d.setSPSH265(n)
		case t == h265.NALUType_PPS_NUT:
			v.pps = n
		case t < h265.NALUType_VPS_NUT: // 0-31 are VCL (slice) NAL units
			vcl = true
			irap = irap || isIRAP(t)
		}
		nalus = append(nalus, n)
		size += len(n)
	}
	if !vcl {
		return nil // parameter sets or SEI in their own PES: remembered above
	}

	pts, reordered := d.timestamp(rawPTS, rawDTS)
	if reordered && !d.acceptBFrames() {
		return d.refuseBFrames(rawPTS, rawDTS, false)
	}
	if !d.startable(irap, v.vps != nil && v.sps != nil && v.pps != nil) {
		return nil
	}
	if irap && !h265ParamsInFront(nalus) {
		nalus, size = withH265ParameterSets(nalus, v.vps, v.sps, v.pps)
	}
	return d.emitUnit(&av.AccessUnit{Codec: av.CodecH265, PTS: pts, NALUs: nalus, IDR: irap, Size: size}, emit)
}

// h265ParamsInFront reports whether the picture carries VPS, SPS and
// PPS, in that order, before its first IRAP slice, as a decoder starting
// there needs them.
func h265ParamsInFront(nalus [][]byte) bool {
	vps, sps, pps, irap := h265Layout(nalus)
	return vps >= 0 && vps < sps && sps < pps && pps < irap
}

// h265Layout is the index of the first VPS, SPS, PPS and IRAP slice of a
// picture, -1 for each it lacks.
func h265Layout(nalus [][]byte) (vps, sps, pps, irap int) {
	vps, sps, pps, irap = -1, -1, -1, -1
	for i, n := range nalus {
		switch t := h265Type(n); {
		case t == h265.NALUType_VPS_NUT && vps < 0:
			vps = i
		case t == h265.NALUType_SPS_NUT && sps < 0:
			sps = i
		case t == h265.NALUType_PPS_NUT && pps < 0:
			pps = i
		case isIRAP(t) && irap < 0:
			irap = i
		}
	}
	return vps, sps, pps, irap
}

// withH265ParameterSets rebuilds an IRAP picture that lacks some of its
// parameter sets, or has them out of order, with the latest VPS, SPS and
// PPS in front, in the order each refers to the one before (the latest
// include any this picture carried, since they were remembered while it
// was read).
func withH265ParameterSets(nalus [][]byte, vps, sps, pps []byte) ([][]byte, int) {
	out := make([][]byte, 0, len(nalus)+3)
	out = append(out, vps, sps, pps)
	size := len(vps) + len(sps) + len(pps)
	for _, n := range nalus {
		switch h265Type(n) {
		case h265.NALUType_VPS_NUT, h265.NALUType_SPS_NUT, h265.NALUType_PPS_NUT:
			continue
		}
		out = append(out, n)
		size += len(n)
	}
	return out, size
}

// setSPSH265 remembers the latest SPS and reports stream info when it
// changes.
func (d *Demuxer) setSPSH265(nalu []byte) {
	v := &d.video
	if bytes.Equal(nalu, v.sps) {
		return
	}
	var sps h265.SPS
	if err := sps.Unmarshal(nalu); err != nil {
		d.decodeError(fmt.Errorf("H.265 SPS: %w", err))
		return
	}
	v.sps = nalu
	ptl := sps.ProfileTierLevel
	info := av.StreamInfo{
		Codec:   av.CodecH265.String(),
		Profile: h265ProfileName(ptl.GeneralProfileIdc),
		Width:   sps.Width(),
		Height:  sps.Height(),
		FPS:     sps.FPS(),
		H265: av.H265Params{ProfileID: int(ptl.GeneralProfileIdc), TierFlag: int(ptl.GeneralTierFlag),
			LevelID: int(ptl.GeneralLevelIdc)},
	}
	d.reportInfo(info)
}

// reportInfo hands changed stream info to OnInfo.
func (d *Demuxer) reportInfo(info av.StreamInfo) {
	v := &d.video
	if v.infoSent && info == v.info {
		return
	}
	v.info, v.infoSent = info, true
	d.log.Debug("video stream info", "codec", info.Codec, "width", info.Width, "height", info.Height,
		"profile", info.Profile, "fps", info.FPS)
	if d.onInfo != nil {
		d.onInfo(info)
	}
}

// h265ProfileName names general_profile_idc as ffprobe does (H.265 A.3).
func h265ProfileName(idc uint8) string {
	switch idc {
	case 1:
		return "Main"
	case 2:
		return "Main 10"
	case 3:
		return "Main Still Picture"
	case 4:
		return "Rext"
	}
	return fmt.Sprintf("general_profile_idc %d", idc)
}
