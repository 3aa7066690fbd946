// Package av defines the one media type every stage of srtwhep shares: an
// H.264 access unit as demuxed from MPEG-TS, already cut into RTP payloads.
//
// An AccessUnit is immutable once handed to the hub: every reader receives
// the same pointer, so no stage after the publisher may write to it or to any
// of the byte slices it holds.
package av

import "time"

// ClockRate is the RTP clock of H.264 video and also the unit of MPEG-TS
// timestamps, which is why PTS values travel unconverted end to end.
const ClockRate = 90000

// AccessUnit is one coded picture.
type AccessUnit struct {
	// PTS is the presentation time in 90 kHz ticks, unwrapped (monotonic
	// across the 33-bit wrap of MPEG-TS).
	PTS int64

	// NALUs are the NAL units of the picture without start codes. An IDR
	// access unit always carries SPS and PPS in front of its slices.
	NALUs [][]byte

	// IDR is true when a decoder can start at this picture.
	IDR bool

	// Payloads are the RTP payloads of the picture (single NAL unit, STAP-A
	// or FU-A), cut once by the publisher and shared by every viewer, which
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

// StreamInfo describes a published H.264 stream as read from its SPS.
type StreamInfo struct {
	Codec   string // "H264"
	Profile string // e.g. "High", "Constrained Baseline"
	Width   int
	Height  int
	FPS     float64
}
