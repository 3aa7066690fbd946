package config

import "time"

// pathVideo checks a path's video keys (pkg/ingest's transcoding choice).
func (v *validator) pathVideo(key string, p Path, def *Path) {
	if def == nil || p.Video != def.Video {
		switch p.Video {
		case VideoAuto, VideoPassthrough, VideoTranscode:
		default:
			v.fail(key+".video", "%q is not a video mode; use auto (transcode only what browsers cannot play), "+
				"passthrough (never transcode) or transcode (always)", p.Video)
		}
	}
	if def == nil || p.MaxKeyframeInterval != def.MaxKeyframeInterval {
		// Below the transcoder's own 2 s interval, auto would transcode
		// every stream already made for WebRTC.
		if time.Duration(p.MaxKeyframeInterval) < 2*time.Second {
			v.fail(key+".maxKeyframeInterval", "%s is below the transcoder's own 2s keyframe interval; use 2s or more, e.g. 4s",
				p.MaxKeyframeInterval)
		}
	}
}

// transcode checks the transcode section (pkg/cpubudget, pkg/vtranscode).
func (v *validator) transcode() {
	t := v.c.Transcode
	if t.MaxCPUPercent < 0 || t.MaxCPUPercent > 100 {
		v.fail("transcode.maxCPUPercent", "%d is not a percentage; use 1 to 100 of the CPU the server may use, e.g. 50, or 0 for no limit", t.MaxCPUPercent)
	}
	// Below 144 lines nothing is legible; above 4320 is no cap at all.
	if t.MaxHeight != 0 && (t.MaxHeight < 144 || t.MaxHeight > 4320 || t.MaxHeight%2 != 0) {
		v.fail("transcode.maxHeight", "%d is not an even picture height from 144 to 4320; use e.g. 720 (1280x720 from a 16:9 source), or 0 to keep the source's", t.MaxHeight)
	}
	if t.MaxFrameRate != 0 && (t.MaxFrameRate < 5 || t.MaxFrameRate > 120) {
		v.fail("transcode.maxFrameRate", "%d is not a frame rate from 5 to 120; use e.g. 30, or 0 to keep the source's", t.MaxFrameRate)
	}
	// A 320x240 picture at least, so a typo does not refuse every stream.
	if t.MaxDecodeArea != 0 && (t.MaxDecodeArea < 320*240 || t.MaxDecodeArea > 8192*8192) {
		v.fail("transcode.maxDecodeArea", "%d is not a picture area from 76800 (320x240) to 67108864 pixels; use e.g. 8294400 (3840x2160), or 0 for no limit", t.MaxDecodeArea)
	}
}
