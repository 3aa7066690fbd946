// Package sdpoffer is the one model of a WHEP viewer's SDP offer. The
// offer is parsed once (with pion/sdp), checked against what the media
// plane needs, and the codec decisions are made here, so the WHEP handler
// and the media plane's answer read the same mids, payload types and
// credentials.
//
// Faults of the offer are *Error, whose text tells the viewer what to
// change; pkg/whep answers them with 400.
package sdpoffer

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/pion/sdp/v3"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// MaxBytes bounds the offer Parse reads. Browsers send 3 to 10 KB, and
// the WHEP handler's default body limit is 64 KiB; the bound keeps a
// configured larger limit, or another caller, from handing the parser
// megabytes (parsing is linear, but each section's attributes are
// scanned a few times).
const MaxBytes = 1 << 20

// H264Profiles are the profile-level-ids the server sends, in preference
// order: 42e01f (constrained baseline) first because every browser decodes
// it and Safari shows black video on a mismatch; the others only so that a
// browser that did not offer 42e01f still gets a profile it asked for.
// 64001f is last: only a High-profile stream picks it (ForStream).
var H264Profiles = []string{"42e01f", "42001f", "4d001f", "640c1f", "64001f"}

// Offer is a viewer's offer as the server answers it.
type Offer struct {
	// Sections are every m-section, in offer order: the answer carries
	// one per section (JSEP §5.3.1), rejecting those not chosen.
	Sections []Section
	// Bundle are the mids of the offer's first a=group:BUNDLE, nil
	// without one.
	Bundle []string
	// Session-level ICE credentials, fingerprints and DTLS role; each
	// Section already falls back to them.
	ICE          ICE
	Fingerprints []Fingerprint
	Setup        string
	// Video is the index in Sections of the video section answered; Parse
	// guarantees it has an H.264 or an H.265 codec and ICE credentials.
	Video int
	// VideoCodec is the codec the video section is answered with: H.264
	// from Parse, H.265 when ForStream chose it for an H.265 path.
	VideoCodec av.Codec
	// Audio is the index of the audio section answered with Opus, or -1:
	// the first audio section the viewer receives on, when it offers Opus
	// at 48 kHz. Whether audio is sent at all is the caller's choice.
	Audio int
}

// VideoSection is the section video is sent on.
func (o *Offer) VideoSection() *Section { return &o.Sections[o.Video] }

// AudioSection is the section audio would be sent on, nil without one.
func (o *Offer) AudioSection() *Section {
	if o.Audio < 0 {
		return nil
	}
	return &o.Sections[o.Audio]
}

// H264 is the H.264 codec chosen from the video section; the offer must
// have one (VideoCodec is H.264).
func (o *Offer) H264() Codec { return *o.VideoSection().H264 }

// Sent is the offered codec the video section is answered with, as
// VideoCodec says: the viewer's payload type and fmtp for what is sent.
func (o *Offer) Sent() Codec {
	v := o.VideoSection()
	if o.VideoCodec == av.CodecH265 {
		return *v.H265
	}
	return *v.H264
}

// Bundled reports whether the offer groups its sections with BUNDLE
// (RFC 8843): then every answered section shares one transport.
func (o *Offer) Bundled() bool { return len(o.Bundle) > 0 }

// WithICE returns a copy of o carrying the viewer's new ICE credentials
// in every section, as an ICE-restart offer does (RFC 8839 §4.4.1.1.1).
// o itself is not changed: a session may still be reading it.
func (o *Offer) WithICE(ufrag, pwd string) *Offer {
	c := *o
	c.ICE.Ufrag, c.ICE.Pwd = ufrag, pwd
	c.Sections = make([]Section, len(o.Sections))
	copy(c.Sections, o.Sections)
	for i := range c.Sections {
		c.Sections[i].ICE.Ufrag, c.Sections[i].ICE.Pwd = ufrag, pwd
	}
	return &c
}

// Error is an offer the server refuses; its text is one line that says
// what is wrong and how to fix it, meant for the viewer (a WHEP 400 body).
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// Errorf makes an *Error. A media plane with a requirement of its own
// (rtcp-mux, a DTLS role) refuses the offer with it too, so the viewer
// gets the same kind of answer whichever layer found the fault.
func Errorf(format string, args ...any) error {
	return &Error{msg: strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " ")}
}

// Parse reads raw, checks that it is an offer a WHEP viewer can use, and
// picks the sections and codecs to answer with, for an H.264 stream of
// unknown profile; ForStream then fits the choice to the path's stream.
// Errors are *Error.
func Parse(raw string) (*Offer, error) {
	if len(raw) > MaxBytes {
		return nil, Errorf("SDP offer is %d bytes, more than the %d this server reads; browsers send about 10 KB", len(raw), MaxBytes)
	}
	// pion/sdp reads an empty body as an empty session and names a
	// non-SDP body's first odd byte; the viewer is better told what the
	// body should have been.
	body := strings.TrimLeft(raw, " \t\r\n")
	if body == "" {
		return nil, Errorf("empty SDP offer; POST the viewer's SDP offer (application/sdp) as the body")
	}
	if !strings.HasPrefix(body, "v=") {
		return nil, Errorf("malformed SDP offer: an SDP offer begins with \"v=0\", this body with %q", firstRunes(body, 16))
	}
	var sd sdp.SessionDescription
	if err := sd.UnmarshalString(raw); err != nil {
		return nil, Errorf("malformed SDP offer: %v", err)
	}
	o := &Offer{Video: -1, Audio: -1, Setup: sessionValue(&sd, "setup")}
	o.ICE = ICE{Ufrag: sessionValue(&sd, "ice-ufrag"), Pwd: sessionValue(&sd, "ice-pwd"),
		Options: strings.Fields(sessionValue(&sd, "ice-options"))}
	for _, a := range sd.Attributes {
		switch a.Key {
		case "group":
			if f := strings.Fields(a.Value); len(f) > 0 && f[0] == "BUNDLE" && o.Bundle == nil {
				o.Bundle = f[1:]
			}
		case "fingerprint":
			o.Fingerprints = append(o.Fingerprints, parseFingerprint(a.Value))
		}
	}
	o.Sections = make([]Section, len(sd.MediaDescriptions))
	for i, md := range sd.MediaDescriptions {
		o.Sections[i] = parseSection(md, o)
	}
	o.inheritBundleTransport()
	if err := o.pickVideo(); err != nil {
		return nil, err
	}
	o.pickAudio()
	v := o.VideoSection()
	if v.ICE.Ufrag == "" || v.ICE.Pwd == "" {
		return nil, Errorf("offer has no ice-ufrag/ice-pwd; a WebRTC offer must carry ICE credentials")
	}
	if len(v.Fingerprints) == 0 {
		return nil, Errorf("offer has no DTLS fingerprint; a WebRTC offer must carry a=fingerprint")
	}
	return o, nil
}

// answerable reports whether s may be answered with media at all; this
// is the one place that decides it. A port-0 section is one the viewer
// offers but must not use (RFC 3264 §5.1), except one that carries
// a=bundle-only and is in the BUNDLE group: under bundlePolicy
// "max-bundle" a browser that follows RFC 8843 §7.2 (Firefox) writes
// every section after the first so, asking to share the first one's
// transport, and the answerer accepts them into the group (§6, §7.3.3).
// Chromium writes port 9 there instead. A bundle-only section outside
// the group asks for nothing it can get, so it stays rejected.
func (o *Offer) answerable(s *Section) bool {
	if s.Port != 0 {
		return true
	}
	return s.BundleOnly && s.Mid != "" && slices.Contains(o.Bundle, s.Mid)
}

// inheritBundleTransport gives the sections of the BUNDLE group the
// transport of the offerer-tagged section (the group's first mid) where
// they lack their own: RFC 8843 §7.1.3 has the offerer leave the
// TRANSPORT and IDENTICAL attributes (ICE credentials, fingerprint,
// setup, rtcp-mux) out of bundle-only sections, since they share the
// tagged one's transport. Browsers repeat them today; an offer that does
// not must still be answerable.
func (o *Offer) inheritBundleTransport() {
	if !o.Bundled() {
		return
	}
	tag := -1
	for i := range o.Sections {
		if o.Sections[i].Mid == o.Bundle[0] && o.Sections[i].Port != 0 {
			tag = i
			break
		}
	}
	if tag < 0 {
		return
	}
	t := &o.Sections[tag]
	for i := range o.Sections {
		s := &o.Sections[i]
		if i == tag || s.Mid == "" || !slices.Contains(o.Bundle, s.Mid) {
			continue
		}
		if s.ICE.Ufrag == "" {
			s.ICE.Ufrag = t.ICE.Ufrag
		}
		if s.ICE.Pwd == "" {
			s.ICE.Pwd = t.ICE.Pwd
		}
		if s.ICE.Options == nil {
			s.ICE.Options = t.ICE.Options
		}
		if len(s.Fingerprints) == 0 {
			s.Fingerprints = t.Fingerprints
		}
		if s.Setup == "" {
			s.Setup = t.Setup
		}
		s.RTCPMux = s.RTCPMux || t.RTCPMux
	}
}

// pickVideo sets o.Video to the first answerable video section the viewer
// receives on and chooses its H.264 codec.
func (o *Offer) pickVideo() error {
	var directions []string
	for i := range o.Sections {
		s := &o.Sections[i]
		if s.Kind != "video" || !o.answerable(s) {
			continue
		}
		if s.Direction.Receives() {
			o.Video = i
			break
		}
		// Named once each: an offer of thousands of sendonly sections
		// still gets a one-line answer.
		if !slices.Contains(directions, string(s.Direction)) {
			directions = append(directions, string(s.Direction))
		}
	}
	if o.Video < 0 {
		if len(directions) == 0 {
			return Errorf("offer has no video m-section; add a recvonly video transceiver")
		}
		return Errorf("offer has no recvonly or sendrecv video m-section (got %s); a WHEP viewer must receive video", strings.Join(directions, ", "))
	}
	v := &o.Sections[o.Video]
	var names []string
	var h264 []int
	for i, c := range v.Codecs {
		if !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
		if strings.EqualFold(c.Name, "H264") && c.Clock == 90000 && c.Params["packetization-mode"] == "1" {
			h264 = append(h264, i)
		}
	}
	v.H265 = pickH265(v.Codecs, 0)
	if len(h264) == 0 {
		if v.H265 != nil {
			// Only an H.265 path can be sent to it; ForStream says so
			// to the viewer of any other.
			v.RTX = v.rtxFor(v.H265.PT)
			o.VideoCodec = av.CodecH265
			return nil
		}
		offered := strings.Join(names, ", ")
		if offered == "" {
			offered = "nothing"
		}
		return Errorf("offer has no H.264 (packetization-mode=1) video; offered: %s", offered)
	}
	chosen, ok := pickH264(v.Codecs, h264)
	if !ok {
		var got []string
		for _, i := range h264 {
			got = append(got, v.Codecs[i].Params["profile-level-id"])
		}
		return Errorf("offer has no H.264 profile this server sends (profile-level-id %s); offered: %s",
			strings.Join(H264Profiles, ", "), strings.Join(got, ", "))
	}
	v.H264 = &v.Codecs[chosen]
	v.RTX = v.rtxFor(v.H264.PT)
	return nil
}

// pickH264 returns the first offered codec (in offer order) compatible with
// our most preferred profile, then the next profile, and so on.
// Compatibility is pion's rule (RFC 6184 §8.2.2): profile_idc and the
// constraint flags must be equal, the level may differ.
func pickH264(codecs []Codec, cands []int) (int, bool) {
	for _, want := range H264Profiles {
		w, _ := hex.DecodeString(want)
		for _, i := range cands {
			got, err := hex.DecodeString(codecs[i].Params["profile-level-id"])
			if err == nil && len(got) == 3 && got[0] == w[0] && got[1] == w[1] {
				return i, true
			}
		}
	}
	return 0, false
}

// pickAudio sets o.Audio to the first answerable audio section the viewer
// receives on, if it offers Opus at 48 kHz. A first audio section without
// Opus is not an error, nor is a later one looked at: the viewer gets
// video, and the audio section is rejected.
func (o *Offer) pickAudio() {
	for i := range o.Sections {
		s := &o.Sections[i]
		if s.Kind != "audio" || !o.answerable(s) || !s.Direction.Receives() {
			continue
		}
		for j, c := range s.Codecs {
			if strings.EqualFold(c.Name, "opus") && c.Clock == 48000 {
				s.Opus = &s.Codecs[j]
				o.Audio = i
				break
			}
		}
		return
	}
}

// firstRunes is s up to its n-th rune: enough of a body to recognise it
// in an error, never a whole upload.
func firstRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// sessionValue is a session-level attribute's value, "" when absent.
func sessionValue(sd *sdp.SessionDescription, key string) string {
	v, _ := sd.Attribute(key)
	return v
}
