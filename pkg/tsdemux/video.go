package tsdemux

import (
	"bytes"
	"fmt"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"

	"github.com/srtwhep/srtwhep/pkg/av"
)

const (
	// maxPTSStep is the largest forward PTS step taken as continuous; a
	// bigger one (or any step back) is a discontinuity and is smoothed over.
	maxPTSStep = 5 * av.ClockRate
	// defaultFrameTicks stands in for the frame duration across a
	// discontinuity until a real step has been seen (30 fps).
	defaultFrameTicks = av.ClockRate / 30
)

// videoState is the per-stream H.264 bookkeeping, owned by Run's goroutine.
type videoState struct {
	codec     av.Codec
	sps, pps  []byte
	vps       []byte // H.265 only
	spsParsed *h264.SPS
	info      av.StreamInfo
	infoSent  bool

	// needIDR holds output back: at start, and after a reference picture
	// was lost, since the following pictures cannot be decoded correctly.
	needIDR bool
	// skipping is a needIDR caused by damage (not the start), reported to
	// OnSkipped when the output resumes; skipFrom is droppedAUs then.
	skipping  bool
	skipCause error
	skipFrom  uint64
	skipTrans bool // OnSkip blamed the transport

	refFrameNumOK bool
	prevRefFrame  uint32

	ptsDec     mpegts.TimeDecoder
	havePTS    bool
	lastRaw    int64 // last 33-bit input PTS: audio is placed relative to it
	lastIn     int64 // last unwrapped input PTS
	lastOut    int64 // last emitted (re-based) PTS
	offset     int64 // added to unwrapped PTS to keep output monotonic
	frameTicks int64
	// reorders: some picture had DTS ≠ PTS. With a B-pyramid (x264's
	// default with 3 B-frames) the non-reference B-frames are presented
	// as they are decoded, PTS = DTS, and ffmpeg then writes no DTS; their
	// step back is still reordering, not a jump.
	reorders bool

	warnedBFrames bool
	// reorderAsked: OnBFrames was asked; reorderOK: it said the consumer
	// takes B-frames (in decode order, each with its own PTS).
	reorderAsked, reorderOK bool
}

func (v *videoState) init() {
	v.needIDR = true
	v.frameTicks = defaultFrameTicks
}

// onAccessUnit handles one H.264 access unit from mediacommon (AUD already
// stripped from the front). Errors it returns end Run.
func (d *Demuxer) onAccessUnit(rawPTS, rawDTS int64, au [][]byte, emit func(*av.AccessUnit) error) error {
	v := &d.video
	d.maybeSummarise()

	nalus := make([][]byte, 0, len(au)+2)
	var idr bool
	var firstVCL []byte
	size := 0
	for _, n := range au {
		if len(n) == 0 {
			continue
		}
		switch h264.NALUType(n[0] & 0x1f) {
		case h264.NALUTypeAccessUnitDelimiter, h264.NALUTypeFillerData:
			continue // useless to a WebRTC decoder, only costs bandwidth
		case h264.NALUTypeSPS:
			d.setSPS(n)
		case h264.NALUTypePPS:
			v.pps = n
		case h264.NALUTypeIDR:
			idr = true
			if firstVCL == nil {
				firstVCL = n
			}
		case h264.NALUTypeNonIDR:
			if firstVCL == nil {
				firstVCL = n
			}
		}
		nalus = append(nalus, n)
		size += len(n)
	}
	if firstVCL == nil {
		// Parameter sets or SEI sent in their own PES: remembered above,
		// nothing to show.
		return nil
	}

	var hdr sliceHeader
	var hdrOK bool
	if v.spsParsed != nil {
		var err error
		hdr, err = parseSliceHeader(firstVCL, v.spsParsed)
		if err != nil {
			err = fmt.Errorf("H.264 slice header: %w", err)
			d.decodeError(err)
			d.skipToIDR(err)
		} else {
			hdrOK = true
		}
	}

	pts, reordered := d.timestamp(rawPTS, rawDTS)
	if ((hdrOK && hdr.isB()) || reordered) && !d.acceptBFrames() {
		return d.refuseBFrames(rawPTS, rawDTS, hdrOK && hdr.isB())
	}

	if hdrOK {
		d.trackFrameNum(hdr, idr)
	}

	if !d.startable(idr, v.sps != nil && v.pps != nil) {
		return nil
	}

	if idr {
		nalus, size = withParameterSets(nalus, v.sps, v.pps, size)
	}
	return d.emitUnit(&av.AccessUnit{Codec: av.CodecH264, PTS: pts, NALUs: nalus, IDR: idr, Size: size}, emit)
}

// startable reports whether a picture may be emitted: false (and it is
// counted as dropped) while the output waits for a keyframe whose
// parameter sets are known, at start or after damage.
func (d *Demuxer) startable(key, haveParams bool) bool {
	v := &d.video
	if !v.needIDR {
		return true
	}
	if !key || !haveParams {
		d.droppedAUs.Add(1)
		if v.skipTrans {
			d.droppedTransp.Add(1)
		}
		return false
	}
	v.needIDR = false
	d.resumed()
	return true
}

// emitUnit counts and hands on one finished access unit of either codec.
func (d *Demuxer) emitUnit(au *av.AccessUnit, emit func(*av.AccessUnit) error) error {
	d.accessUnits.Add(1)
	if au.IDR {
		d.idrs.Add(1)
	}
	// Taken here, once the picture is whole: the PES that carried it ended
	// only when the next one began (video PES have no length in TS).
	au.Arrival = time.Now()
	return emit(au)
}

// skipToIDR holds the output back until the next IDR because damage made
// the following pictures undecodable.
func (d *Demuxer) skipToIDR(cause error) {
	v := &d.video
	if v.needIDR {
		return // already skipping (or not started): the first cause stands
	}
	v.needIDR = true
	v.skipping, v.skipCause, v.skipFrom = true, cause, d.droppedAUs.Load()
	v.skipTrans = d.onSkip != nil && d.onSkip(cause)
}

// resumed reports a finished skip to OnSkipped.
func (d *Demuxer) resumed() {
	v := &d.video
	if !v.skipping {
		return
	}
	v.skipping = false
	sk := Skip{Frames: d.droppedAUs.Load() - v.skipFrom, Cause: v.skipCause, TransportLoss: v.skipTrans}
	v.skipTrans = false
	if d.onSkipped != nil {
		d.onSkipped(sk)
	}
}

// withParameterSets puts an IDR's parameter sets first, as decoders
// expect: SPS before PPS, both before the first slice. Those the unit
// carries move there (a damaged or unusual stream may send them after
// the slice); those it lacks come from the cache.
func withParameterSets(nalus [][]byte, sps, pps []byte, size int) ([][]byte, int) {
	var ownSPS, ownPPS, rest [][]byte
	for _, n := range nalus {
		switch h264.NALUType(n[0] & 0x1f) {
		case h264.NALUTypeSPS:
			ownSPS = append(ownSPS, n)
		case h264.NALUTypePPS:
			ownPPS = append(ownPPS, n)
		default:
			rest = append(rest, n)
		}
	}
	if len(ownSPS) == 0 {
		ownSPS = [][]byte{sps}
		size += len(sps)
	}
	if len(ownPPS) == 0 {
		ownPPS = [][]byte{pps}
		size += len(pps)
	}
	out := make([][]byte, 0, len(nalus)+2)
	out = append(append(append(out, ownSPS...), ownPPS...), rest...)
	return out, size
}

// timestamp unwraps the PTS and keeps the output monotonic across jumps.
// reordered reports a picture presented before its predecessor while DTS
// differs from PTS: the signature of B-frames, as opposed to a jump.
func (d *Demuxer) timestamp(rawPTS, rawDTS int64) (pts int64, reordered bool) {
	v := &d.video
	in := v.ptsDec.Decode(rawPTS)
	if !v.havePTS {
		v.havePTS = true
		v.lastRaw, v.lastIn, v.lastOut, v.offset = rawPTS, in, in, 0
		return in, false
	}
	v.reorders = v.reorders || rawPTS != rawDTS
	step := in - v.lastIn
	// Once the stream is known to reorder, a picture presented before the
	// latest reference is a B-frame even where its DTS equals its PTS
	// (x264's and x265's non-reference B pictures in a B-pyramid).
	if step < 0 && v.reorders && -step < maxPTSStep {
		if d.acceptBFrames() {
			// A B-frame for the transcoder, which reorders by PTS: its
			// own, on the re-based timeline; the timeline itself follows
			// the latest reference picture.
			return in + v.offset, true
		}
		return v.lastOut, true
	}
	if step < 0 || step > maxPTSStep {
		d.decodeError(fmt.Errorf("PTS jumped by %+.3f s; timeline re-based", float64(step)/av.ClockRate))
		v.offset = v.lastOut + v.frameTicks - in
	} else if step > 0 {
		v.frameTicks = step
	}
	v.lastRaw, v.lastIn = rawPTS, in
	v.lastOut = in + v.offset
	return v.lastOut, false
}

// acceptBFrames asks OnBFrames, once, whether the consumer transcodes
// the stream and so takes pictures in decode order.
func (d *Demuxer) acceptBFrames() bool {
	v := &d.video
	if !v.reorderAsked {
		v.reorderAsked = true
		v.reorderOK = d.onBFrames != nil && d.onBFrames()
	}
	return v.reorderOK
}

func (d *Demuxer) refuseBFrames(rawPTS, rawDTS int64, bSlice bool) error {
	d.bFramesDropped.Add(1)
	why := "PTS goes backwards in decode order"
	if bSlice {
		why = "B slice"
	}
	if !d.video.warnedBFrames {
		d.video.warnedBFrames = true
		d.log.Warn("B-frames detected: WebRTC browsers cannot play them; encode with -bf 0 (ffmpeg) or set B-frames to 0 in OBS",
			"reason", why, "pts", rawPTS, "dts", rawDTS)
	}
	return fmt.Errorf("%w (%s at PTS %d, DTS %d)", ErrBFrames, why, rawPTS, rawDTS)
}

// trackFrameNum detects lost reference pictures: TS loss drops whole PES
// silently (astits discards a PES whose continuity counter breaks), and
// frame_num is the only place that loss is still visible.
func (d *Demuxer) trackFrameNum(hdr sliceHeader, idr bool) {
	v := &d.video
	if idr {
		v.prevRefFrame, v.refFrameNumOK = hdr.frameNum, true
		return
	}
	if v.refFrameNumOK && !v.spsParsed.GapsInFrameNumValueAllowedFlag {
		next := (v.prevRefFrame + 1) % hdr.maxFrameNum
		// Equal is the second field of a field pair.
		if hdr.frameNum != next && hdr.frameNum != v.prevRefFrame {
			err := fmt.Errorf("H.264 frame_num %d, expected %d: a reference picture was lost", hdr.frameNum, next)
			d.decodeError(err)
			d.skipToIDR(err)
		}
	}
	if hdr.refIdc != 0 {
		v.prevRefFrame, v.refFrameNumOK = hdr.frameNum, true
	}
}

// setSPS remembers the latest SPS and reports stream info when it changes.
func (d *Demuxer) setSPS(nalu []byte) {
	v := &d.video
	if bytes.Equal(nalu, v.sps) {
		return
	}
	var sps h264.SPS
	if err := sps.Unmarshal(nalu); err != nil {
		d.decodeError(fmt.Errorf("H.264 SPS: %w", err))
		return
	}
	if sps.Log2MaxFrameNumMinus4 > 12 {
		d.decodeError(fmt.Errorf("H.264 SPS: log2_max_frame_num_minus4 %d out of range", sps.Log2MaxFrameNumMinus4))
		return
	}
	if v.sps != nil {
		// A new SPS may restart frame_num numbering; only the next IDR
		// re-establishes it.
		v.refFrameNumOK = false
	}
	v.sps, v.spsParsed = nalu, &sps
	info := av.StreamInfo{
		Codec:   av.CodecH264.String(),
		Profile: profileName(&sps),
		Width:   sps.Width(),
		Height:  sps.Height(),
		FPS:     sps.FPS(),
		// The three bytes after the NAL header, as SDP spells them
		// (Unmarshal succeeded, so they are there).
		ProfileLevelID: fmt.Sprintf("%02x%02x%02x", nalu[1], nalu[2], nalu[3]),
	}
	d.reportInfo(info)
}
