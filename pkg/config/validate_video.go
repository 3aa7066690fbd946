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
