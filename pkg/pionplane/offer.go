package pionplane

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pion/sdp/v3"

	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

// pionOffer is the viewer's offer as pion is given it, so that pion's
// answer says what this plane does, as the own plane's does:
//
//   - An audio or video section the viewer would also send on (sendrecv,
//     stated or by default: whip-whep's README adds its transceivers
//     so) is given as recvonly. Otherwise pion turns our sendonly
//     transceiver into sendrecv when it matches it and answers sendrecv,
//     though nothing the viewer sends is read.
//   - A data channel section (m=application) is given as rejected: port
//     0, no a=bundle-only, out of the BUNDLE group. The server serves no
//     data channel, and pion would otherwise accept it into the group and
//     start an SCTP association for it (RFC 8843 §7.3.3 lets the
//     answerer reject any section of the group).
//
// Bundle-only audio and video sections are left as they are: pion
// accepts them into the group itself (peerconnection.go checks
// a=bundle-only next to port 0).
func pionOffer(raw string) (string, error) {
	var sd sdp.SessionDescription
	if err := sd.UnmarshalString(raw); err != nil {
		return "", sdpoffer.Errorf("malformed SDP offer: %v", err)
	}
	var rejected []string
	for _, md := range sd.MediaDescriptions {
		switch md.MediaName.Media {
		case "audio", "video":
			md.Attributes = slices.DeleteFunc(md.Attributes, func(a sdp.Attribute) bool { return a.Key == "sendrecv" })
			if !hasAny(md, "recvonly", "sendonly", "inactive") {
				md.Attributes = append(md.Attributes, sdp.Attribute{Key: "recvonly"})
			}
		case "application":
			md.MediaName.Port = sdp.RangedPort{Value: 0}
			md.Attributes = slices.DeleteFunc(md.Attributes, func(a sdp.Attribute) bool { return a.Key == "bundle-only" })
			if mid, ok := md.Attribute("mid"); ok {
				rejected = append(rejected, mid)
			}
		}
	}
	for i, a := range sd.Attributes {
		f := strings.Fields(a.Value)
		if a.Key != "group" || len(f) == 0 || f[0] != "BUNDLE" || len(rejected) == 0 {
			continue
		}
		f = slices.DeleteFunc(f, func(mid string) bool { return slices.Contains(rejected, mid) })
		sd.Attributes[i].Value = strings.Join(f, " ")
	}
	b, err := sd.Marshal()
	if err != nil {
		return "", sdpoffer.Errorf("malformed SDP offer: %v", err)
	}
	return string(b), nil
}

// withRejectedMids gives each rejected section of pion's answer the mid
// of the offer's section it answers, as the own plane's answer does. pion
// writes a port-0 section without a=mid; RFC 8843 §7.3.3 and RFC 3264
// §6 keep the mid on a rejected section so that the offerer can tell
// which of its sections was refused (Firefox matches sections by mid).
func withRejectedMids(answer, offer string) (string, error) {
	var a, o sdp.SessionDescription
	if err := a.UnmarshalString(answer); err != nil {
		return "", fmt.Errorf("parse our answer: %w", err)
	}
	if err := o.UnmarshalString(offer); err != nil {
		return "", sdpoffer.Errorf("malformed SDP offer: %v", err)
	}
	changed := false
	for i, md := range a.MediaDescriptions {
		if md.MediaName.Port.Value != 0 || i >= len(o.MediaDescriptions) {
			continue
		}
		if _, ok := md.Attribute("mid"); ok {
			continue
		}
		if mid, ok := o.MediaDescriptions[i].Attribute("mid"); ok {
			md.Attributes = append([]sdp.Attribute{{Key: "mid", Value: mid}}, md.Attributes...)
			changed = true
		}
	}
	if !changed {
		return answer, nil
	}
	b, err := a.Marshal()
	if err != nil {
		return "", fmt.Errorf("render our answer: %w", err)
	}
	return string(b), nil
}

// hasAny reports whether md has one of the property attributes keys.
func hasAny(md *sdp.MediaDescription, keys ...string) bool {
	for _, k := range keys {
		if _, ok := md.Attribute(k); ok {
			return true
		}
	}
	return false
}
