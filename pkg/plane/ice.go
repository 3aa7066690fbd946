package plane

import (
	"errors"
	"fmt"
	"slices"

	"github.com/pion/sdp/v3"
)

// ICEFromSDP reads the ICE credentials and candidates of a description,
// session-level ones first, then the first media section's. It serves
// pion's ICE restart, whose new candidates pion exposes nowhere but its
// local description, and tests reading a peer's; a first answer's ufrag
// comes from the plane that generated it (Answer.Ufrag).
func ICEFromSDP(raw string) (ICE, error) {
	var sd sdp.SessionDescription
	if err := sd.UnmarshalString(raw); err != nil {
		return ICE{}, fmt.Errorf("parse local description: %w", err)
	}
	var l ICE
	l.Ufrag, _ = sd.Attribute("ice-ufrag")
	l.Pwd, _ = sd.Attribute("ice-pwd")
	for _, md := range sd.MediaDescriptions {
		for _, a := range md.Attributes {
			switch a.Key {
			case "ice-ufrag":
				if l.Ufrag == "" {
					l.Ufrag = a.Value
				}
			case "ice-pwd":
				if l.Pwd == "" {
					l.Pwd = a.Value
				}
			case "candidate":
				if c := "candidate:" + a.Value; !slices.Contains(l.Candidates, c) {
					l.Candidates = append(l.Candidates, c)
				}
			}
		}
	}
	if l.Ufrag == "" {
		return ICE{}, errors.New("local description has no ice-ufrag")
	}
	return l, nil
}
