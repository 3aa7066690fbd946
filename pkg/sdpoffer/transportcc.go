package sdpoffer

import (
	"slices"
	"strconv"
	"strings"
)

// TransportCCURI names the transport-wide sequence number header
// extension (draft-holmer-rmcat-transport-wide-cc-extensions-01) that
// Chromium, Firefox and Safari offer with a=rtcp-fb … transport-cc.
const TransportCCURI = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"

// TransportCC is what the answer negotiates of transport-wide congestion
// control: the header extension's ID (0: not negotiated) and whether the
// audio section carries it too.
type TransportCC struct {
	ID    uint8
	Audio bool
}

// TransportCC decides transport-wide congestion control for the answer,
// in one place for the media plane that writes the answer and the sender
// that stamps the packets: the video section must offer both the header
// extension and transport-cc feedback for videoPT, the payload type
// answered. Audio (audioPT, the Opus payload type answered, when the
// answer has audio) joins only with the same extension ID: one transport
// of a BUNDLE group has one mapping (RFC 8285 §6), and one counter runs
// across both tracks.
func (o *Offer) TransportCC(videoPT, audioPT uint8) TransportCC {
	id := o.VideoSection().transportCC(videoPT)
	if id == 0 {
		return TransportCC{}
	}
	a := o.AudioSection()
	return TransportCC{ID: id, Audio: a != nil && a.transportCC(audioPT) == id}
}

// transportCC is the section's transport-wide sequence number extension
// ID when it also offers transport-cc feedback for pt, else 0.
func (s *Section) transportCC(pt uint8) uint8 {
	if !slices.Contains(s.FeedbackFor(pt), "transport-cc") {
		return 0
	}
	for _, e := range s.Extmap {
		// "<id>[/<direction>] <uri> [<attributes>]" (RFC 8285 §8).
		f := strings.Fields(e)
		if len(f) < 2 || f[1] != TransportCCURI {
			continue
		}
		idText, dir, _ := strings.Cut(f[0], "/")
		// The one-byte header form carries IDs 1 to 14, what every
		// browser offers; a viewer that will not receive it gets none.
		id, err := strconv.ParseUint(idText, 10, 8)
		if err != nil || id < 1 || id > 14 || dir == "sendonly" || dir == "inactive" {
			return 0
		}
		return uint8(id)
	}
	return 0
}
