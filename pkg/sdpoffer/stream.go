package sdpoffer

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// CodecError is an offer that is well formed but cannot take the path's
// video as it is published (an H.265 path, an offer without H.265): the
// viewer's browser, not its offer, is at fault, so pkg/whep answers 409.
// Its text says what the path publishes and how to fix it.
type CodecError struct {
	msg string
	// H265 says the path publishes H.265: a server that could convert
	// it (video: auto) would have served this viewer an H.264 rendition.
	H265 bool
}

func (e *CodecError) Error() string { return e.msg }

// ForStream fits the offer's video codec to the stream the path
// publishes and returns the offer with it; o itself is not changed (a
// copy is made only when the choice changes). It is the one place that
// decides whether an offer can take a path's video: a transcoder for
// viewers that cannot hooks in where it returns *CodecError.
//
// An unknown stream (info.Codec "", as for an edge that has not had its
// first IDR yet) keeps Parse's choice. An H.265 stream needs an offered
// H265/90000; an H.264 stream takes the offered payload type whose
// profile matches its SPS (see pickH264For), else Parse's choice.
func (o *Offer) ForStream(info av.StreamInfo) (*Offer, error) {
	v := o.VideoSection()
	switch info.Codec {
	case av.CodecH265.String():
		h := pickH265(v.Codecs, info.H265.ProfileID)
		if h == nil {
			return nil, &CodecError{H265: true, msg: fmt.Sprintf("This stream is H.265 (HEVC, %s), which this browser cannot play over WebRTC: "+
				"its offer has no H265/90000 video (it offered %s). "+
				"Use Safari 17+ or Chrome 136+ with hardware HEVC decoding, "+
				"or publish H.264 (ffmpeg -c:v libx264 -bf 0; OBS: x264 encoder)", orUnknown(info.Profile), offeredVideo(v.Codecs))}
		}
		return o.withVideo(av.CodecH265, h), nil
	case "":
		if v.H264 == nil {
			return nil, &CodecError{msg: "the path has no stream yet, and this viewer's offer has only H.265 video; " +
				"offer H.264 too, or retry once the stream is live"}
		}
		return o, nil
	}
	if v.H264 == nil {
		return nil, &CodecError{msg: fmt.Sprintf("the path publishes %s, and this viewer's offer has no H.264 (packetization-mode=1) video; "+
			"use a browser with H.264 for WebRTC", info.Codec)}
	}
	if c := pickH264For(v.Codecs, info.ProfileLevelID); c != nil && c != v.H264 {
		return o.withVideo(av.CodecH264, c), nil
	}
	return o, nil
}

// withVideo is a copy of o answering its video section with c.
func (o *Offer) withVideo(codec av.Codec, c *Codec) *Offer {
	if o.VideoCodec == codec && o.Sent().PT == c.PT {
		return o
	}
	n := *o
	n.Sections = make([]Section, len(o.Sections))
	copy(n.Sections, o.Sections)
	v := &n.Sections[n.Video]
	// c points into v.Codecs, which the copy shares: no codec is
	// modified, only which one is chosen.
	if codec == av.CodecH265 {
		v.H265 = c
	} else {
		v.H264 = c
	}
	v.RTX = v.rtxFor(c.PT)
	n.VideoCodec = codec
	return &n
}

// pickH264For is the offered H.264 payload type (packetization mode 1, a
// profile this server registers) that best carries a stream whose SPS
// says plid: first one whose profile_idc and constraint flags equal the
// stream's (the level may differ, RFC 6184 §8.2.2), then one with
// level-asymmetry-allowed=1 whose profile decodes the stream's
// (Constrained Baseline ⊂ Main ⊂ High), the lowest such. nil when none does or plid is
// not known: the caller keeps Parse's choice.
func pickH264For(codecs []Codec, plid string) *Codec {
	want, err := hex.DecodeString(plid)
	if err != nil || len(want) != 3 {
		return nil
	}
	var compatible *Codec
	compatibleRank := 0
	for i := range codecs {
		c := &codecs[i]
		got, ok := h264Profile(c)
		if !ok {
			continue
		}
		if got[0] == want[0] && got[1] == want[1] {
			return c
		}
		// The closest fit: a Constrained Baseline stream is answered
		// with the Constrained Baseline payload type, not High's.
		r := decodeRank(got)
		if c.Params["level-asymmetry-allowed"] == "1" && decodeRank(want) > 0 && r >= decodeRank(want) &&
			(compatible == nil || r < compatibleRank) {
			compatible, compatibleRank = c, r
		}
	}
	return compatible
}

// h264Profile is c's profile-level-id when c is an H.264 payload type in
// packetization mode 1 with a profile among H264Profiles.
func h264Profile(c *Codec) ([]byte, bool) {
	if !strings.EqualFold(c.Name, "H264") || c.Clock != 90000 || c.Params["packetization-mode"] != "1" {
		return nil, false
	}
	got, err := hex.DecodeString(c.Params["profile-level-id"])
	if err != nil || len(got) != 3 {
		return nil, false
	}
	for _, p := range H264Profiles {
		w, _ := hex.DecodeString(p)
		if got[0] == w[0] && got[1] == w[1] {
			return got, true
		}
	}
	return nil, false
}

// decodeRank orders the H.264 profiles a WebRTC decoder is offered for by
// what they decode: a decoder of a higher rank decodes every stream of a
// lower one (no B-frames reach a viewer, so Constrained High decodes
// High). 0 for a profile outside that chain (Baseline without
// constraint_set1, Extended, the 4:4:4 and 10-bit ones).
func decodeRank(plid []byte) int {
	switch plid[0] {
	case 66:
		if plid[1]&0x40 != 0 { // constraint_set1: Constrained Baseline
			return 1
		}
	case 77:
		return 2
	case 100:
		return 3
	}
	return 0
}

// pickH265 is the first offered H265/90000 payload type a single RTP
// stream can carry (tx-mode SRST, the default) whose profile-id is
// profileID (RFC 7798 §7.1: absent means 1, Main), else the first such
// payload type at all; nil when none. profileID 0 means unknown.
func pickH265(codecs []Codec, profileID int) *Codec {
	var first *Codec
	for i := range codecs {
		c := &codecs[i]
		if !strings.EqualFold(c.Name, "H265") || c.Clock != 90000 {
			continue
		}
		if tx := c.Params["tx-mode"]; tx != "" && !strings.EqualFold(tx, "SRST") {
			continue
		}
		if first == nil {
			first = c
		}
		id := 1
		if p, err := strconv.Atoi(c.Params["profile-id"]); err == nil {
			id = p
		}
		if profileID != 0 && id == profileID {
			return c
		}
	}
	return first
}

// offeredVideo names the video codecs an offer listed, in its order and
// once each, leaving out the repair formats (rtx, red, FEC) that carry
// no picture of their own: what the viewer is told its browser can play.
func offeredVideo(codecs []Codec) string {
	var names []string
	seen := map[string]bool{}
	for _, c := range codecs {
		n := strings.ToUpper(c.Name)
		switch n {
		case "RTX", "RED", "ULPFEC", "FLEXFEC", "FLEXFEC-03":
			continue
		}
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		names = append(names, n)
	}
	if len(names) == 0 {
		return "no video codec"
	}
	return strings.Join(names, ", ")
}

func orUnknown(s string) string {
	if s == "" {
		return "profile unknown"
	}
	return s
}
