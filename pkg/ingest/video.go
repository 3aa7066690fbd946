package ingest

import (
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/rtph264"
	"github.com/srtwhep/srtwhep/pkg/rtph265"
	"github.com/srtwhep/srtwhep/pkg/vtranscode"
)

const (
	// The source GOP kept so the transcoder can start from its IDR (the
	// decoder needs every reference since then) when a path switches
	// mid-GOP; past either bound the switch waits for the next IDR.
	maxGOPUnits = 600
	maxGOPBytes = 32 << 20
	// rateSlack is how far the source's rate may move from the encoder's
	// before the encoder follows it.
	rateSlack = 0.5
)

// Reasons a path is transcoded, each with the encoder setting that avoids it.
type transcodeReason struct {
	why, fix string
}

var (
	reasonForced  = transcodeReason{"video: transcode is set for this path", "set video: auto (or passthrough) for this path"}
	reasonBFrames = transcodeReason{"the stream has B-frames, which WebRTC browsers cannot play",
		"ffmpeg -bf 0; OBS (Advanced, x264 options) bframes=0; GStreamer x264enc bframes=0"}
	reasonProfile = transcodeReason{"the H.264 profile is not playable in browsers (10-bit or 4:2:2/4:4:4)",
		"ffmpeg -pix_fmt yuv420p; OBS Settings > Advanced > Color Format NV12; GStreamer videoconvert ! video/x-raw,format=I420 before x264enc"}
	reasonH265 = transcodeReason{"H.265 to a viewer that did not offer H.265",
		"ffmpeg -c:v libx264 -bf 0; OBS Encoder x264; GStreamer x264enc"}
	reasonLongGOP = transcodeReason{"the keyframe interval is longer than maxKeyframeInterval, so joining viewers would wait for a picture",
		"ffmpeg -g 60 (2 s at 30 fps); OBS Keyframe Interval 2 s (Advanced x264 options keyint=60); GStreamer x264enc key-int-max=60"}
)

// videoPipeline sends the publisher's video to the hub as published or,
// when browsers cannot play it, through one transcoder for the path. It
// runs on the publisher's goroutine (the demuxer's callbacks); the
// transcoder writes to the hub from its own goroutine, which Close ends.
type videoPipeline struct {
	pub      *hub.Publisher
	settings VideoSettings
	log      *slog.Logger

	info    av.StreamInfo
	gop     []*av.AccessUnit // source units since the last IDR
	gopSize int
	gopFull bool // a bound was hit: nothing kept until the next IDR
	lastIDR int64
	haveIDR bool
	written int64 // PTS of the last unit passed through
	wrote   bool
	rate    int // bit/s the transcoder was last given
	// The transcoder stops when nobody watched since unwatchedFrom (a
	// PTS) for Linger and idles (no video to the hub) until a reader
	// comes.
	unwatched     bool
	unwatchedFrom int64
	idle          bool

	// rend is the path's H.264 rendition (hub.Publisher.AddRendition)
	// for viewers that did not offer H.265: with video: auto, an H.265
	// path passes through to the rest and transcodes only while the
	// rendition has readers (demand). nil when the whole path passes
	// through or is transcoded.
	rend *hub.Publisher
	// told: the rendition's transcoder started once and said why.
	told bool

	// tcs runs the path's transcoder: none while it passes through or
	// idles; its past counters are of those stopped for lack of viewers.
	tcs    transcoderSlot
	reason transcodeReason // why the last transcoder started

	limits TranscodeLimits
	// measuredLogged: the running transcoder's measured cost was logged.
	measuredLogged bool
	// withheld: a transcode the path's video needs (wanted) was refused
	// by the limits, so no video reaches its viewers, who are told why
	// (a live problem: 409); it is tried again at each IDR.
	withheld       bool
	withheldReason string
	wanted         transcodeReason
	// tryAtIDR: a refused transcode that is not needed to play (a long
	// GOP, the H.265 path's rendition) is tried again at the next IDR,
	// not at every picture.
	tryAtIDR bool
	// refusals reports a refusal (a problem for viewers when the video is
	// withheld) and its end; set by the manager.
	refusals refusalSink
	// refuseLogged and refusedSince space the refusal's log line.
	refuseLogged time.Time
	refusedSince int

	// ladder is the path's lower renditions while it passes through
	// (rung.go); gopRate is the bit/s of the last whole source GOP, which
	// the automatic ladder is planned from.
	ladder  ladder
	gopRate int
}

// refusalSink is where a pipeline's refusals go: note records why the
// path's viewers get no picture (reason, text), clear forgets it.
type refusalSink struct {
	note  func(reason, text string)
	clear func()
	tried func(reason string) // every refused try, for the metric
}

func (r refusalSink) report(reason, text string) {
	if r.note != nil {
		r.note(reason, text)
	}
}

func (r refusalSink) cleared() {
	if r.clear != nil {
		r.clear()
	}
}

func (v *videoPipeline) init(pub *hub.Publisher, s VideoSettings, log *slog.Logger) {
	if s.Mode == "" {
		s.Mode = VideoAuto
	}
	if s.MaxKeyframeInterval <= 0 {
		s.MaxKeyframeInterval = DefaultMaxKeyframeInterval
	}
	if s.Linger <= 0 {
		s.Linger = DefaultLinger
	}
	v.pub, v.settings, v.log = pub, s, log
	v.ladder.settings, v.ladder.log = s.Ladder, log
}

// bframes is the demuxer's OnBFrames: the stream reorders pictures.
func (v *videoPipeline) bframes() bool {
	if v.pub == nil || v.settings.Mode == VideoPassthrough {
		return false // refused with the fix, as before
	}
	v.ladder.close() // the source itself is no rung anyone can play
	if v.rend != nil {
		// The original cannot be played by anyone: the whole path is
		// transcoded, and the rendition's few readers (it is the first
		// pictures) end.
		v.tcs.stop()
		v.pub.DropRendition()
		v.rend, v.idle = nil, false
	}
	return v.tcs.transcoder() != nil || v.start(reasonBFrames) || v.withheld
}

// setInfo is called with each new SPS's description.
func (v *videoPipeline) setInfo(info av.StreamInfo) {
	v.info = info
	if tc := v.tcs.transcoder(); tc != nil && vtranscode.TooLarge(info.Width, info.Height, v.limits.MaxDecodeArea) != "" {
		// The stream grew past what may be decoded: the transcoder stops
		// before the decoder meets the new size, and the next IDR's try
		// refuses it with the reason.
		r := v.reason
		v.tcs.stop()
		if v.rend == nil {
			v.withhold(r, ReasonPictureTooLarge, v.tooLargeProblem(r))
		}
		v.tryAtIDR = true
	}
	// H.265's Main 10 plays where H.265 plays at all (Safari, Chrome on
	// hardware decoders), so the profile check is H.264's alone.
	if v.settings.Mode == VideoAuto && info.Codec != av.CodecH265.String() && unplayableProfile(info.Profile) && v.tcs.transcoder() == nil {
		_ = v.start(reasonProfile) // on failure it passes through, as before
	}
	switch {
	case v.rend != nil:
		v.rend.SetInfo(transcodedInfo(info))
	case v.tcs.transcoder() != nil || v.idle || v.withheld:
		// Viewers of a transcoded path get H.264, whatever was published.
		v.pub.SetInfo(transcodedInfo(info))
	case v.settings.Mode == VideoAuto && info.Codec == av.CodecH265.String():
		v.addRendition()
	}
}

// addRendition gives an H.265 path its H.264 rendition, idle until a
// viewer that did not offer H.265 reads it.
func (v *videoPipeline) addRendition() {
	rend, err := v.pub.AddRendition()
	if errors.Is(err, hub.ErrEnded) {
		return // taken over: the path's viewers are its successor's
	}
	if err != nil {
		v.log.Error("no H.264 rendition for viewers without H.265; they are refused", "err", err)
		return
	}
	rend.SetInfo(transcodedInfo(v.info))
	// The reason is recorded (for the API) once the transcoder runs.
	v.rend, v.idle = rend, true
}

// transcodedInfo is what viewers of the transcoder's output are told:
// H.264 of the source's size and rate (the profile-level-id is the
// viewer's own choice, which the Constrained Baseline output fits).
func transcodedInfo(src av.StreamInfo) av.StreamInfo {
	return av.StreamInfo{Codec: av.CodecH264.String(), Profile: "Constrained Baseline",
		Width: src.Width, Height: src.Height, FPS: src.FPS}
}

// out is the publisher the transcoder writes to.
func (v *videoPipeline) out() *hub.Publisher {
	if v.rend != nil {
		return v.rend
	}
	return v.pub
}

// unplayableProfile: browsers' H.264 decoders (hardware ones above all)
// take 8-bit 4:2:0 only.
func unplayableProfile(p string) bool {
	return strings.Contains(p, "10") || strings.Contains(p, "4:2:2") || strings.Contains(p, "4:4:4") ||
		strings.HasPrefix(p, "profile_idc")
}

// write takes one access unit from the demuxer, in decode order.
func (v *videoPipeline) write(au *av.AccessUnit) {
	v.remember(au)
	if v.withheld {
		// Its viewers were told why (409); at an IDR the transcode is
		// tried again, fed the GOP so far (au).
		if au.IDR {
			v.start(v.wanted)
		}
		return
	}
	if v.rend != nil {
		v.pass(au)
		if tc := v.tcs.transcoder(); !v.demand(au) && tc != nil {
			tc.Write(au)
		}
		return
	}
	if tc := v.tcs.transcoder(); tc != nil || v.idle {
		if !v.demand(au) {
			tc.Write(au)
		}
		return
	}
	switch {
	case v.settings.Mode == VideoTranscode:
		if v.start(reasonForced) { // fed the GOP so far, au included
			return
		}
	case v.settings.Mode == VideoAuto && v.haveIDR && !v.tryAtIDR &&
		time.Duration(au.PTS-v.lastIDR)*time.Second/av.ClockRate > v.settings.MaxKeyframeInterval:
		if v.start(reasonLongGOP) {
			return
		}
	}
	v.pass(au)
	v.feedLadder(au)
}

// pass writes au to the path as published.
func (v *videoPipeline) pass(au *av.AccessUnit) {
	au.Payloads = fragment(au)
	v.pub.Write(au)
	v.written, v.wrote = au.PTS, true
}

// demand stops the transcoder once nobody read the path for Linger and
// starts it again, from the kept GOP, when a reader comes: true when au
// was dealt with (fed to the new transcoder, or dropped while idle).
func (v *videoPipeline) demand(au *av.AccessUnit) bool {
	readers := v.out().Stats().Readers
	switch {
	case v.idle && readers > 0:
		r := v.reason
		if v.rend != nil {
			r = reasonH265
		}
		if v.tryAtIDR && !au.IDR {
			return true
		}
		// Only the newest pictures are encoded: the kept GOP is decoded
		// for its references, and the viewer starts at once.
		if !v.run(r, au.PTS-1) {
			if v.rend == nil && v.withheld {
				v.idle = false // the withheld state tries again from here
			}
			return true
		}
		v.idle = false
		if v.rend != nil && !v.told {
			v.told = true
			v.logStart(v.reason)
		} else {
			v.log.Info("video transcoder resumed for a viewer", "reason", v.reason.why)
		}
		return true
	case v.idle:
		return true
	case readers > 0:
		v.unwatched = false
	case !v.unwatched:
		v.unwatched, v.unwatchedFrom = true, au.PTS
	case time.Duration(au.PTS-v.unwatchedFrom)*time.Second/av.ClockRate >= v.settings.Linger:
		v.tcs.stop()
		v.idle, v.unwatched = true, false
		// The cache ends where the video stops; the next viewer starts at
		// the resumed transcoder's first IDR.
		v.out().DropCache()
		v.log.Info("video transcoder stopped: no viewers", "for", v.settings.Linger.String())
		return true
	}
	return false
}

// remember keeps the source GOP, bounded, for a transcoder that starts
// mid-GOP.
func (v *videoPipeline) remember(au *av.AccessUnit) {
	if au.IDR {
		v.tryAtIDR = false
		v.measure()
		v.followRate()
		if !v.gopFull && len(v.gop) >= 2 {
			v.gopRate = v.sourceBitrate()
		}
		clear(v.gop)
		v.gop, v.gopSize, v.gopFull = v.gop[:0], 0, false
		v.lastIDR, v.haveIDR = au.PTS, true
	}
	if v.gopFull || v.settings.Mode == VideoPassthrough {
		return
	}
	if len(v.gop) >= maxGOPUnits || v.gopSize+au.Size > maxGOPBytes {
		clear(v.gop)
		v.gop, v.gopSize, v.gopFull = v.gop[:0], 0, true
		return
	}
	v.gop = append(v.gop, au)
	v.gopSize += au.Size
}

// emit runs on the transcoder's goroutine.
func (v *videoPipeline) emit(au *av.AccessUnit) {
	au.Payloads = fragment(au)
	v.out().Write(au)
}

// fragment cuts au's RTP payloads, once for every viewer, as its codec's
// RTP format does (RFC 6184 for H.264, RFC 7798 for H.265).
func fragment(au *av.AccessUnit) [][]byte {
	if au.Codec == av.CodecH265 {
		return rtph265.Fragment(au.NALUs, rtph265.DefaultMaxPayload)
	}
	return rtph264.Fragment(au.NALUs, rtph264.DefaultMaxPayload)
}

// close stops the transcoder before the publisher leaves the hub, so no
// picture is written after it.
func (v *videoPipeline) close() {
	v.ladder.close()
	v.tcs.stop()
	v.rend = nil // closed with the path's publisher, with its grace
	clear(v.gop)
	v.gop = nil
}
