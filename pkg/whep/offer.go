package whep

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pion/sdp/v3"

	"github.com/srtwhep/srtwhep/pkg/plane"
)

// offer is what the server needs from a viewer's SDP offer.
type offer struct {
	payloadType uint8  // the viewer's payload type for the H.264 we send
	profile     string // its profile-level-id, as offered (lower case)
	mid         string // mid of the video m-section we answer
	ufrag, pwd  string // the viewer's ICE credentials
	// audio is set when the viewer can receive Opus; audioPT is its
	// payload type for it.
	audio   bool
	audioPT uint8
}

// fmtp returns the fmtp line of the answer: the viewer's own
// profile-level-id, so a strict decoder (Safari) accepts the stream.
func (o offer) fmtp() string { return plane.H264Fmtp(o.profile) }

// badOffer is an offer we refuse with 400; its text is the response body.
type badOffer struct{ msg string }

func (e *badOffer) Error() string { return e.msg }

func badOfferf(format string, args ...any) error {
	return &badOffer{msg: fmt.Sprintf(format, args...)}
}

// parseOffer checks that raw is an SDP offer a WHEP viewer of an H.264
// stream can use and picks the codec to answer with. Errors are *badOffer
// and say what is wrong.
func parseOffer(raw string) (offer, error) {
	var sd sdp.SessionDescription
	if err := sd.UnmarshalString(raw); err != nil {
		return offer{}, badOfferf("malformed SDP offer: %v", err)
	}
	var video *sdp.MediaDescription
	var directions []string
	for _, md := range sd.MediaDescriptions {
		if md.MediaName.Media != "video" || md.MediaName.Port.Value == 0 {
			continue
		}
		dir := direction(md)
		if dir == "recvonly" || dir == "sendrecv" {
			video = md
			break
		}
		directions = append(directions, dir)
	}
	if video == nil {
		if len(directions) == 0 {
			return offer{}, badOfferf("offer has no video m-section; add a recvonly video transceiver")
		}
		return offer{}, badOfferf("offer has no recvonly or sendrecv video m-section (got %s); a WHEP viewer must receive video", strings.Join(directions, ", "))
	}

	codecs := offeredCodecs(video)
	var names []string
	var h264 []offeredCodec
	for _, c := range codecs {
		if !slices.Contains(names, c.name) {
			names = append(names, c.name)
		}
		if strings.EqualFold(c.name, "H264") && c.clock == 90000 && c.params["packetization-mode"] == "1" {
			h264 = append(h264, c)
		}
	}
	if len(h264) == 0 {
		offered := strings.Join(names, ", ")
		if offered == "" {
			offered = "nothing"
		}
		return offer{}, badOfferf("offer has no H.264 (packetization-mode=1) video; offered: %s", offered)
	}
	chosen, ok := pickH264(h264)
	if !ok {
		var got []string
		for _, c := range h264 {
			got = append(got, c.params["profile-level-id"])
		}
		return offer{}, badOfferf("offer has no H.264 profile this server sends (profile-level-id %s); offered: %s",
			strings.Join(plane.H264Profiles, ", "), strings.Join(got, ", "))
	}

	o := offer{payloadType: chosen.pt, profile: strings.ToLower(chosen.params["profile-level-id"])}
	o.audioPT, o.audio = offeredOpus(sd.MediaDescriptions)
	o.mid, _ = video.Attribute("mid")
	o.ufrag, _ = video.Attribute("ice-ufrag")
	o.pwd, _ = video.Attribute("ice-pwd")
	if o.ufrag == "" {
		o.ufrag, _ = sd.Attribute("ice-ufrag")
	}
	if o.pwd == "" {
		o.pwd, _ = sd.Attribute("ice-pwd")
	}
	if o.ufrag == "" || o.pwd == "" {
		return offer{}, badOfferf("offer has no ice-ufrag/ice-pwd; a WebRTC offer must carry ICE credentials")
	}
	if _, ok := video.Attribute("fingerprint"); !ok {
		if _, ok := sd.Attribute("fingerprint"); !ok {
			return offer{}, badOfferf("offer has no DTLS fingerprint; a WebRTC offer must carry a=fingerprint")
		}
	}
	return o, nil
}

// offeredOpus finds the first audio m-section the viewer receives on and
// its payload type for Opus at 48 kHz. An audio section without Opus is
// not an error: the viewer gets video, and pion rejects that section.
func offeredOpus(mds []*sdp.MediaDescription) (uint8, bool) {
	for _, md := range mds {
		if md.MediaName.Media != "audio" || md.MediaName.Port.Value == 0 {
			continue
		}
		if dir := direction(md); dir != "recvonly" && dir != "sendrecv" {
			continue
		}
		for _, c := range offeredCodecs(md) {
			if strings.EqualFold(c.name, "opus") && c.clock == 48000 {
				return c.pt, true
			}
		}
		return 0, false
	}
	return 0, false
}

func direction(md *sdp.MediaDescription) string {
	for _, d := range []string{"recvonly", "sendrecv", "sendonly", "inactive"} {
		if _, ok := md.Attribute(d); ok {
			return d
		}
	}
	return "sendrecv" // RFC 4566: the default
}

type offeredCodec struct {
	pt     uint8
	name   string
	clock  int
	params map[string]string
}

// offeredCodecs reads the rtpmap/fmtp pairs of md in m-line order. pion's
// own helper hides why a codec is unusable, and we want to name it.
func offeredCodecs(md *sdp.MediaDescription) []offeredCodec {
	byPT := map[uint8]*offeredCodec{}
	var order []uint8
	for _, f := range md.MediaName.Formats {
		pt, err := strconv.ParseUint(f, 10, 8)
		if err != nil {
			continue
		}
		if _, dup := byPT[uint8(pt)]; dup {
			continue
		}
		byPT[uint8(pt)] = &offeredCodec{pt: uint8(pt), params: map[string]string{}}
		order = append(order, uint8(pt))
	}
	for _, a := range md.Attributes {
		pt, rest, ok := splitPT(a.Value)
		if !ok {
			continue
		}
		c := byPT[pt]
		if c == nil {
			continue
		}
		switch a.Key {
		case "rtpmap":
			name, clock, _ := strings.Cut(rest, "/")
			clock, _, _ = strings.Cut(clock, "/")
			c.name = name
			c.clock, _ = strconv.Atoi(clock)
		case "fmtp":
			for _, kv := range strings.Split(rest, ";") {
				k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
				c.params[strings.ToLower(k)] = v
			}
		}
	}
	out := make([]offeredCodec, 0, len(order))
	for _, pt := range order {
		if c := byPT[pt]; c.name != "" {
			out = append(out, *c)
		}
	}
	return out
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

// pickH264 returns the first offered codec (in offer order) compatible with
// our most preferred profile, then the next profile, and so on.
// Compatibility is pion's rule (RFC 6184 §8.2.2): profile_idc and the
// constraint flags must be equal, the level may differ.
func pickH264(cands []offeredCodec) (offeredCodec, bool) {
	for _, want := range plane.H264Profiles {
		w, _ := hex.DecodeString(want)
		for _, c := range cands {
			got, err := hex.DecodeString(c.params["profile-level-id"])
			if err == nil && len(got) == 3 && got[0] == w[0] && got[1] == w[1] {
				return c, true
			}
		}
	}
	return offeredCodec{}, false
}

// restartOffer is the original offer with the viewer's new ICE credentials
// and without the previous generation's candidates; pion treats a new
// remote ufrag in an offer as an ICE restart.
func restartOffer(raw, ufrag, pwd string) string {
	lines := strings.Split(strings.ReplaceAll(raw, "\r\n", "\n"), "\n")
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "a=ice-ufrag:"):
			l = "a=ice-ufrag:" + ufrag
		case strings.HasPrefix(l, "a=ice-pwd:"):
			l = "a=ice-pwd:" + pwd
		case strings.HasPrefix(l, "a=candidate:"), l == "a=end-of-candidates":
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\r\n")
}

// sdpFrag is a parsed application/trickle-ice-sdpfrag body (RFC 8840).
type sdpFrag struct {
	ufrag, pwd string
	candidates []string // "candidate:…" values
	end        bool     // a=end-of-candidates
}

var errEmptyFrag = errors.New("empty")

// parseFrag reads an SDP fragment leniently: unknown lines are ignored, but
// anything that is not an SDP line is an error that names the line.
func parseFrag(body string) (sdpFrag, error) {
	var f sdpFrag
	n := 0
	for i, l := range strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if len(l) < 2 || l[1] != '=' || l[0] < 'a' || l[0] > 'z' {
			return sdpFrag{}, fmt.Errorf("line %d %q is not an SDP line (want x=value)", i+1, l)
		}
		n++
		switch {
		case strings.HasPrefix(l, "a=ice-ufrag:"):
			f.ufrag = strings.TrimPrefix(l, "a=ice-ufrag:")
		case strings.HasPrefix(l, "a=ice-pwd:"):
			f.pwd = strings.TrimPrefix(l, "a=ice-pwd:")
		case strings.HasPrefix(l, "a=candidate:"):
			f.candidates = append(f.candidates, strings.TrimPrefix(l, "a="))
		case l == "a=end-of-candidates":
			f.end = true
		}
	}
	if n == 0 {
		return sdpFrag{}, errEmptyFrag
	}
	return f, nil
}

// restartFrag renders the restart answer: our new credentials plus
// candidates in the viewer's video m-section, as RFC 8840 fragments are
// laid out.
func restartFrag(l plane.ICE, o offer) string {
	var b strings.Builder
	b.WriteString("a=ice-ufrag:" + l.Ufrag + "\r\n")
	b.WriteString("a=ice-pwd:" + l.Pwd + "\r\n")
	fmt.Fprintf(&b, "m=video 9 UDP/TLS/RTP/SAVPF %d\r\n", o.payloadType)
	if o.mid != "" {
		b.WriteString("a=mid:" + o.mid + "\r\n")
	}
	for _, c := range l.Candidates {
		b.WriteString("a=" + c + "\r\n")
	}
	b.WriteString("a=end-of-candidates\r\n")
	return b.String()
}
