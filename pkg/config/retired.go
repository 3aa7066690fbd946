package config

import "strings"

// retired are keys srtwhep had and has no more, each with what became of
// it and the fix, so that a config written for an older version fails
// with that instead of "unknown key" and a list that no longer names it.
var retired = map[string]string{
	"webrtc.mediaPlane": "the pion media plane is gone, srtwhep's own media plane is the only WebRTC transport; delete the line",
	"webrtc.keepalive":  "was the pion media plane's ICE keepalive interval and is gone with it (the own plane is ICE-lite: viewers send the checks, and webrtc.disconnectTimeout ends a silent one); delete the line",
}

// retiredKey is the retired key that key (dotted, any case: environment
// variables are case-insensitive) names, with its message.
func retiredKey(key string) (name, msg string, ok bool) {
	for k, m := range retired {
		if strings.EqualFold(k, key) {
			return k, m, true
		}
	}
	return "", "", false
}
