package sdpoffer

import (
	"slices"
	"strconv"
	"strings"

	"github.com/pion/sdp/v3"
)

// Section is one m-section of the offer.
type Section struct {
	Kind    string   // "video", "audio", "application", …
	Port    int      // 0: rejected by the viewer, or bundle-only
	Protos  []string // e.g. UDP, TLS, RTP, SAVPF
	Formats []string // the m-line's formats, as offered
	Mid     string   // "" without a=mid
	// Direction is the viewer's: Receives() means we may send.
	Direction  Direction
	BundleOnly bool // a=bundle-only (RFC 8843 §6)
	RTCPMux    bool
	RTCPRsize  bool
	// Codecs are the formats with an a=rtpmap, in m-line order. A format
	// without one is left out: nothing can be sent in it.
	Codecs []Codec
	// Feedback are the section's a=rtcp-fb lines in offer order; see
	// FeedbackFor.
	Feedback []Feedback
	// ICE, Fingerprints and Setup are the section's own, or else the
	// session's (RFC 8839 §5.4, RFC 8122 §5).
	ICE          ICE
	Fingerprints []Fingerprint
	Setup        string
	Candidates   []string // a=candidate values, without "candidate:"
	Extmap       []string // a=extmap values, as offered
	// Chosen by Parse (and ForStream): H264 and H265 (nil when not
	// offered) and the RTX of the one answered (Offer.VideoCodec) in the
	// video section answered, Opus in the audio section answered.
	H264 *Codec
	H265 *Codec
	RTX  *Codec
	Opus *Codec
}

// Codec is one payload type of a section.
type Codec struct {
	PT       uint8
	Name     string // as offered: "H264", "opus", "rtx", …
	Clock    int
	Channels int    // 0 when the rtpmap names none
	Fmtp     string // the a=fmtp value after the payload type
	// Params are the fmtp parameters, keys in lower case.
	Params map[string]string
}

// ProfileLevelID is an H.264 codec's profile-level-id, in lower case as
// the answer repeats it.
func (c Codec) ProfileLevelID() string { return strings.ToLower(c.Params["profile-level-id"]) }

// Feedback is one a=rtcp-fb line: PT is the payload type it names, or
// "*" for all of them; Value is the feedback with its spaces normalised
// ("nack pli").
type Feedback struct {
	PT    string
	Value string
}

// FeedbackFor is the feedback offered for pt (by number or "*"), in offer
// order and without repeats.
func (s *Section) FeedbackFor(pt uint8) []string {
	want := strconv.Itoa(int(pt))
	var out []string
	seen := map[string]bool{}
	for _, f := range s.Feedback {
		if (f.PT == want || f.PT == "*") && !seen[f.Value] {
			seen[f.Value] = true
			out = append(out, f.Value)
		}
	}
	return out
}

// Offers reports whether pt is one of the m-line's formats.
func (s *Section) Offers(pt uint8) bool {
	return slices.Contains(s.Formats, strconv.Itoa(int(pt)))
}

// rtxFor is the rtx codec whose apt is pt (RFC 4588 §8.6), nil without one.
func (s *Section) rtxFor(pt uint8) *Codec {
	apt := strconv.Itoa(int(pt))
	for i, c := range s.Codecs {
		if strings.EqualFold(c.Name, "rtx") && c.Params["apt"] == apt {
			return &s.Codecs[i]
		}
	}
	return nil
}

// Direction is an m-section's a=sendrecv, recvonly, sendonly or inactive,
// from the viewer's side.
type Direction string

const (
	SendRecv Direction = "sendrecv"
	RecvOnly Direction = "recvonly"
	SendOnly Direction = "sendonly"
	Inactive Direction = "inactive"
)

// Receives reports whether the viewer receives what we send on it.
func (d Direction) Receives() bool { return d == RecvOnly || d == SendRecv }

// ICE are ICE credentials and options (RFC 8839 §5.4, §5.6).
type ICE struct {
	Ufrag, Pwd string
	Options    []string // e.g. "trickle"
}

// Fingerprint is one a=fingerprint (RFC 8122 §5): the hash function's
// name in lower case and the value as offered (colon-separated hex).
type Fingerprint struct {
	Hash  string
	Value string
}

func parseFingerprint(v string) Fingerprint {
	hash, value, _ := strings.Cut(strings.TrimSpace(v), " ")
	return Fingerprint{Hash: strings.ToLower(hash), Value: strings.TrimSpace(value)}
}

// parseSection reads md; o holds the session-level values it falls back
// to.
func parseSection(md *sdp.MediaDescription, o *Offer) Section {
	s := Section{
		Kind: md.MediaName.Media, Port: md.MediaName.Port.Value,
		Protos: md.MediaName.Protos, Formats: md.MediaName.Formats,
		Direction: direction(md), Codecs: codecs(md),
	}
	// A repeated single-valued attribute counts the first time, as
	// pion/sdp's lookup reads it.
	_, s.BundleOnly = md.Attribute("bundle-only")
	_, s.RTCPMux = md.Attribute("rtcp-mux")
	_, s.RTCPRsize = md.Attribute("rtcp-rsize")
	s.Mid, _ = md.Attribute("mid")
	s.Setup, _ = md.Attribute("setup")
	var ice ICE
	ice.Ufrag, _ = md.Attribute("ice-ufrag")
	ice.Pwd, _ = md.Attribute("ice-pwd")
	options, haveOptions := md.Attribute("ice-options")
	ice.Options = strings.Fields(options)
	for _, a := range md.Attributes {
		switch a.Key {
		case "rtcp-fb":
			if pt, fb, ok := strings.Cut(a.Value, " "); ok {
				s.Feedback = append(s.Feedback, Feedback{PT: pt, Value: strings.Join(strings.Fields(fb), " ")})
			}
		case "fingerprint":
			s.Fingerprints = append(s.Fingerprints, parseFingerprint(a.Value))
		case "candidate":
			s.Candidates = append(s.Candidates, a.Value)
		case "extmap":
			s.Extmap = append(s.Extmap, a.Value)
		}
	}
	// Each falls back on its own: a browser may put the credentials in
	// the sections and the fingerprint at session level.
	if ice.Ufrag == "" {
		ice.Ufrag = o.ICE.Ufrag
	}
	if ice.Pwd == "" {
		ice.Pwd = o.ICE.Pwd
	}
	if !haveOptions {
		ice.Options = o.ICE.Options
	}
	s.ICE = ice
	if len(s.Fingerprints) == 0 {
		s.Fingerprints = o.Fingerprints
	}
	if s.Setup == "" {
		s.Setup = o.Setup
	}
	return s
}

// direction is md's direction attribute; RFC 4566 makes sendrecv the
// default. A section carrying more than one takes the first of recvonly,
// sendrecv, sendonly, inactive that it has.
func direction(md *sdp.MediaDescription) Direction {
	for _, d := range []Direction{RecvOnly, SendRecv, SendOnly, Inactive} {
		if _, ok := md.Attribute(string(d)); ok {
			return d
		}
	}
	return SendRecv
}

// codecs reads the rtpmap/fmtp pairs of md in m-line order. pion's own
// helper hides why a codec is unusable, and the errors want to name it.
func codecs(md *sdp.MediaDescription) []Codec {
	// A payload type is 0..127 in practice and at most 255 here, so a
	// table indexed by it bounds the work whatever the m-line repeats.
	var at [256]int // index+1 into out
	var out []Codec
	for _, f := range md.MediaName.Formats {
		pt, err := strconv.ParseUint(f, 10, 8)
		if err != nil || at[pt] != 0 {
			continue
		}
		out = append(out, Codec{PT: uint8(pt), Params: map[string]string{}})
		at[pt] = len(out)
	}
	for _, a := range md.Attributes {
		if a.Key != "rtpmap" && a.Key != "fmtp" {
			continue
		}
		pt, rest, ok := splitPT(a.Value)
		if !ok || at[pt] == 0 {
			continue
		}
		c := &out[at[pt]-1]
		if a.Key == "rtpmap" {
			name, clock, _ := strings.Cut(rest, "/")
			clock, channels, _ := strings.Cut(clock, "/")
			c.Name = name
			c.Clock, _ = strconv.Atoi(clock)
			c.Channels, _ = strconv.Atoi(channels)
			continue
		}
		c.Fmtp = rest
		for _, kv := range strings.Split(rest, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
			c.Params[strings.ToLower(k)] = v
		}
	}
	kept := out[:0]
	for _, c := range out {
		if c.Name != "" {
			kept = append(kept, c)
		}
	}
	return kept
}

func splitPT(v string) (uint8, string, bool) {
	ptStr, rest, ok := strings.Cut(v, " ")
	if !ok {
		return 0, "", false
	}
	pt, err := strconv.ParseUint(ptStr, 10, 8)
	if err != nil {
		return 0, "", false
	}
	return uint8(pt), strings.TrimSpace(rest), true
}
