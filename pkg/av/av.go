// Package av defines the one media type every stage of srtwhep shares: an
// H.264 or H.265 access unit as demuxed from MPEG-TS, already cut into RTP
// payloads.
//
// An AccessUnit is immutable once handed to the hub: every reader receives
// the same pointer, so no stage after the publisher may write to it or to any
// of the byte slices it holds.
package av

import "time"

// ClockRate is the RTP clock of H.264 and H.265 video and also the unit of MPEG-TS
// timestamps, which is why PTS values travel unconverted end to end.
const ClockRate = 90000

// Codec is a video codec as it is passed through.
type Codec uint8

// The video codecs; the zero value is H.264 so that access units made
// before the codec was carried (and by tests) keep meaning what they did.
const (
	CodecH264 Codec = iota
	CodecH265
)

// String is the codec's SDP encoding name ("H264", "H265"), which is also
// how logs, the API and StreamInfo.Codec name it.
func (c Codec) String() string {
	if c == CodecH265 {
		return "H265"
	}
	return "H264"
}

// AccessUnit is one coded picture.
type AccessUnit struct {
	// Codec is the picture's codec: it decides how NALUs were cut into
	// Payloads and which TS stream type an SRT reader gets.
	Codec Codec

	// PTS is the presentation time in 90 kHz ticks, unwrapped (monotonic
	// across the 33-bit wrap of MPEG-TS).
	PTS int64

	// NALUs are the NAL units of the picture without start codes. An IDR
	// access unit always carries its parameter sets (H.264 SPS and PPS,
	// H.265 VPS, SPS and PPS) in front of its slices.
	NALUs [][]byte

	// IDR is true when a decoder can start at this picture: an H.264 IDR,
	// or an H.265 IRAP picture (IDR, CRA or BLA).
	IDR bool

	// Payloads are the RTP payloads of the picture (RFC 6184 single NAL
	// unit, STAP-A or FU-A; RFC 7798 single NAL unit, AP or FU), cut once by the publisher and shared by every viewer, which
	// only stamps its own RTP headers around them.
	Payloads [][]byte

	// Size is the sum of the NAL unit sizes, kept for byte counters.
	Size int

	// Arrival is when the demuxer had the whole picture from SRT: the
	// start of the server's own share of the latency, which the WHEP side
	// measures up to the write of the picture's last packet. Zero when
	// unknown (access units made by tests).
	Arrival time.Time
}

// StreamInfo describes a published stream as read from its SPS.
type StreamInfo struct {
	Codec   string // "H264" or "H265" (Codec.String)
	Profile string // e.g. "High", "Constrained Baseline", "Main"
	Width   int
	Height  int
	FPS     float64

	// ProfileLevelID is an H.264 stream's profile_idc, constraint flags
	// and level_idc as SDP's profile-level-id spells them (RFC 6184
	// §8.1, six lower-case hex digits), "" for H.265: the answer picks
	// the offered payload type that matches it.
	ProfileLevelID string
	// H265 is an H.265 stream's profile_tier_level as SDP's fmtp
	// parameters carry it (RFC 7798 §7.1), zero for H.264.
	H265 H265Params
}

// H265Params are the RFC 7798 fmtp parameters that describe a stream.
type H265Params struct {
	ProfileID int // general_profile_idc: 1 Main, 2 Main 10
	TierFlag  int // general_tier_flag
	LevelID   int // general_level_idc (30 × the level number)
}
