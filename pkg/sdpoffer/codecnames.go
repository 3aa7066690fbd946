package sdpoffer

import "strings"

// CodecNames lists "media/name" for the first limit distinct codecs of
// raw's audio and video sections (their a=rtpmap lines, in offer order).
// It reads the text itself, so it names them also for an offer Parse
// refuses, which is when an operator needs them most (a browser without
// H.264), and costs nothing when nobody asks.
func CodecNames(raw string, limit int) []string {
	var names []string
	media := ""
	for len(raw) > 0 && len(names) < limit {
		line, rest, _ := strings.Cut(raw, "\n")
		raw = rest
		line = strings.TrimSpace(line)
		if m, ok := strings.CutPrefix(line, "m="); ok {
			media, _, _ = strings.Cut(m, " ")
			continue
		}
		v, ok := strings.CutPrefix(line, "a=rtpmap:")
		if !ok || (media != "video" && media != "audio") {
			continue
		}
		_, enc, _ := strings.Cut(v, " ")
		name, _, _ := strings.Cut(enc, "/")
		if name == "" || len(name) > 32 {
			continue
		}
		name = media + "/" + name
		if !containsFold(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// OffersH264 reports whether a video section of raw names H264 at all.
// Browsers name about a dozen video codecs; the cap bounds the work a
// hostile offer of thousands of names costs.
func OffersH264(raw string) bool {
	for _, c := range CodecNames(raw, 256) {
		if strings.EqualFold(c, "video/H264") {
			return true
		}
	}
	return false
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
