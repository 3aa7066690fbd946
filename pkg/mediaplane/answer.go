package mediaplane

import (
	"context"
	"crypto/rand"
	"crypto/sha512"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pion/sdp/v3"
	"github.com/pion/stun/v4"
)

// msidStream is the MediaStream both tracks belong to: browsers keep lip
// sync only between the tracks of one stream.
const msidStream = "srtwhep"

// rtcpFeedback is the feedback the answer may accept, when offered: what
// the sender acts on or at least reads (receiver-side estimates).
var rtcpFeedback = []string{"nack", "nack pli", "ccm fir", "goog-remb"}

// OfferError is an offer this package cannot answer; its text says why
// and is meant for the viewer (a WHEP 400 body).
type OfferError struct{ msg string }

func (e *OfferError) Error() string { return e.msg }

func offerErrorf(format string, args ...any) error {
	return &OfferError{msg: fmt.Sprintf(format, args...)}
}

// offer is what answering needs from a viewer's offer.
type offer struct {
	sd           *sdp.SessionDescription
	ufrag, pwd   string
	fingerprints remoteFingerprint
	bundle       bool
	video, audio int // indexes of the sections we accept, -1 for none
}

// NewViewer answers a viewer's SDP offer (a browser's: BUNDLE, rtcp-mux,
// DTLS role actpass) and returns the viewer with the answer: ICE-lite,
// every candidate of the shared socket, our fingerprint, setup:passive,
// one sendonly video section with cfg.Video and, when cfg.Audio is set, the
// offer's first audio section with Opus; every other section is rejected.
// Offer problems are *OfferError.
func (s *Server) NewViewer(offerSDP string, cfg ViewerConfig) (*Viewer, string, error) {
	v, _, answer, err := s.newViewer(offerSDP, cfg)
	return v, answer, err
}

// newViewer is NewViewer that also returns the answer's ICE credentials.
func (s *Server) newViewer(offerSDP string, cfg ViewerConfig) (*Viewer, *iceCreds, string, error) {
	o, err := parseOffer(offerSDP, cfg)
	if err != nil {
		return nil, nil, "", err
	}
	v := &Viewer{
		srv: s, cfg: cfg, fp: o.fingerprints, video: randomSSRC(0),
		created: time.Now(), connected: make(chan struct{}), done: make(chan struct{}),
	}
	if o.audio >= 0 {
		v.audio = randomSSRC(v.video)
	}
	c := newCreds(v, o.ufrag)
	c.remoteKey = stun.NewShortTermIntegrity(o.pwd)
	v.creds = c
	answer, err := s.answer(o, v, c)
	if err != nil {
		return nil, nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, "", ErrServerClosed
	}
	v.ctx, v.cancel = context.WithCancel(s.ctx)
	s.byUfrag[c.ufrag] = c
	s.viewers[v] = struct{}{}
	return v, c, answer, nil
}

// randomSSRC returns a random non-zero SSRC other than not.
func randomSSRC(not uint32) uint32 {
	for {
		var b [4]byte
		_, _ = rand.Read(b[:])
		if x := binary.BigEndian.Uint32(b[:]); x != 0 && x != not {
			return x
		}
	}
}

// parseOffer checks what the transport needs from the offer; the codecs
// were picked by the caller and are only checked to be offered.
func parseOffer(raw string, cfg ViewerConfig) (offer, error) {
	o := offer{sd: &sdp.SessionDescription{}, video: -1, audio: -1}
	if err := o.sd.UnmarshalString(raw); err != nil {
		return offer{}, offerErrorf("malformed SDP offer: %v", err)
	}
	if g, ok := o.sd.Attribute("group"); ok && strings.HasPrefix(g, "BUNDLE ") {
		o.bundle = true
	}
	for i, md := range o.sd.MediaDescriptions {
		if _, bundleOnly := md.Attribute("bundle-only"); (md.MediaName.Port.Value == 0 && !bundleOnly) || !receives(md) {
			continue
		}
		switch {
		case md.MediaName.Media == "video" && o.video < 0:
			o.video = i
		case md.MediaName.Media == "audio" && o.audio < 0 && cfg.Audio != nil && o.bundle:
			// Without BUNDLE each section would need a transport of its
			// own; the viewer gets video alone then.
			o.audio = i
		}
	}
	if o.video < 0 {
		return offer{}, offerErrorf("offer has no video m-section the viewer receives on (recvonly or sendrecv)")
	}
	for _, i := range []int{o.video, o.audio} {
		if i < 0 {
			continue
		}
		md := o.sd.MediaDescriptions[i]
		if _, ok := md.Attribute("mid"); !ok && o.bundle {
			return offer{}, offerErrorf("offer's %s m-section has no a=mid, which BUNDLE needs", md.MediaName.Media)
		}
		if _, ok := md.Attribute("rtcp-mux"); !ok {
			return offer{}, offerErrorf("offer's %s m-section lacks a=rtcp-mux: this server multiplexes RTCP with RTP (RFC 8035)", md.MediaName.Media)
		}
		if setup := attr(o.sd, md, "setup"); setup != "" && setup != "actpass" && setup != "active" {
			return offer{}, offerErrorf("offer has a=setup:%s; this server is always the DTLS server, so offer actpass or active", setup)
		}
	}
	videoMD := o.sd.MediaDescriptions[o.video]
	if !offersPT(videoMD, cfg.Video.PayloadType) {
		return offer{}, offerErrorf("payload type %d is not offered in the video m-section", cfg.Video.PayloadType)
	}
	if o.audio >= 0 && !offersPT(o.sd.MediaDescriptions[o.audio], cfg.Audio.PayloadType) {
		return offer{}, offerErrorf("payload type %d is not offered in the audio m-section", cfg.Audio.PayloadType)
	}
	o.ufrag, o.pwd = attr(o.sd, videoMD, "ice-ufrag"), attr(o.sd, videoMD, "ice-pwd")
	if o.ufrag == "" || o.pwd == "" {
		return offer{}, offerErrorf("offer has no ice-ufrag/ice-pwd; a WebRTC offer must carry ICE credentials")
	}
	var err error
	if o.fingerprints, err = parseFingerprints(o.sd, videoMD); err != nil {
		return offer{}, err
	}
	return o, nil
}

// attr is a media-level attribute, or the session-level one.
func attr(sd *sdp.SessionDescription, md *sdp.MediaDescription, key string) string {
	if v, ok := md.Attribute(key); ok {
		return v
	}
	v, _ := sd.Attribute(key)
	return v
}

// receives reports whether the viewer receives on md (RFC 4566: sendrecv
// is the default).
func receives(md *sdp.MediaDescription) bool {
	for _, d := range []string{"sendonly", "inactive"} {
		if _, ok := md.Attribute(d); ok {
			return false
		}
	}
	return true
}

func offersPT(md *sdp.MediaDescription, pt uint8) bool {
	return slices.Contains(md.MediaName.Formats, strconv.Itoa(int(pt)))
}

// parseFingerprints reads the offer's a=fingerprint lines (media level
// first). Only the SHA-2 family is accepted: JSEP requires sha-256, and
// a weaker hash would let a forged certificate through.
func parseFingerprints(sd *sdp.SessionDescription, md *sdp.MediaDescription) (remoteFingerprint, error) {
	var lines []string
	for _, attrs := range [][]sdp.Attribute{md.Attributes, sd.Attributes} {
		for _, a := range attrs {
			if a.Key == "fingerprint" {
				lines = append(lines, a.Value)
			}
		}
		if len(lines) > 0 {
			break
		}
	}
	if len(lines) == 0 {
		return nil, offerErrorf("offer has no DTLS fingerprint; a WebRTC offer must carry a=fingerprint")
	}
	var fp remoteFingerprint
	for _, l := range lines {
		alg, value, _ := strings.Cut(strings.TrimSpace(l), " ")
		var h func([]byte) []byte
		switch strings.ToLower(alg) {
		case "sha-256":
			h = sha256Sum
		case "sha-384":
			h = func(b []byte) []byte { s := sha512.Sum384(b); return s[:] }
		case "sha-512":
			h = func(b []byte) []byte { s := sha512.Sum512(b); return s[:] }
		default:
			continue
		}
		fp = append(fp, fingerprintValue{hash: h, value: strings.ToUpper(strings.TrimSpace(value))})
	}
	if len(fp) == 0 {
		return nil, offerErrorf("offer's fingerprints use no hash this server accepts (sha-256, sha-384, sha-512)")
	}
	return fp, nil
}

// answer renders the SDP answer for o.
func (s *Server) answer(o offer, v *Viewer, c *iceCreds) (string, error) {
	sd, err := sdp.NewJSEPSessionDescription(false)
	if err != nil {
		return "", err
	}
	sd.WithPropertyAttribute("ice-lite")
	var bundle []string
	cname := randomICEString(16)
	for i, md := range o.sd.MediaDescriptions {
		mid, _ := md.Attribute("mid")
		if i != o.video && i != o.audio {
			// Rejected: port 0 and its mid (JSEP §5.3.1). An RTP section
			// lists the static format 0, as pion and browsers answer: the
			// offer's dynamic payload types would need their rtpmap
			// lines, and pion refuses an answer whose formats lack them.
			formats := md.MediaName.Formats
			if slices.ContainsFunc(md.MediaName.Protos, func(p string) bool { return p == "RTP" }) {
				formats = []string{"0"}
			}
			sd.WithMedia(&sdp.MediaDescription{
				MediaName: sdp.MediaName{Media: md.MediaName.Media, Port: sdp.RangedPort{Value: 0},
					Protos: md.MediaName.Protos, Formats: formats},
				ConnectionInformation: &sdp.ConnectionInformation{NetworkType: "IN", AddressType: "IP4",
					Address: &sdp.Address{Address: "0.0.0.0"}},
				Attributes: midAttr(mid),
			})
			continue
		}
		bundle = append(bundle, mid)
		kind, ssrc, codec := "video", v.video, v.cfg.Video
		name, clock, channels := "H264", uint32(90000), uint16(0)
		if i == o.audio {
			kind, ssrc, codec = "audio", v.audio, *v.cfg.Audio
			name, clock, channels = "opus", 48000, 2
		}
		m := sdp.NewJSEPMediaDescription(kind, nil)
		if mid != "" {
			m.WithValueAttribute("mid", mid)
		}
		m.WithICECredentials(c.ufrag, c.pwd).
			WithFingerprint("sha-256", s.fingerprint).
			WithValueAttribute("setup", "passive").
			WithPropertyAttribute("sendonly").
			WithPropertyAttribute("rtcp-mux")
		if _, ok := md.Attribute("rtcp-rsize"); ok {
			m.WithPropertyAttribute("rtcp-rsize")
		}
		m.WithCodec(codec.PayloadType, name, clock, channels, codec.Fmtp)
		for _, fb := range offeredFeedback(md, codec.PayloadType) {
			m.WithValueAttribute("rtcp-fb", fmt.Sprintf("%d %s", codec.PayloadType, fb))
		}
		m.WithValueAttribute("msid", msidStream+" "+kind).
			WithValueAttribute("ssrc", fmt.Sprintf("%d cname:%s", ssrc, cname)).
			WithValueAttribute("ssrc", fmt.Sprintf("%d msid:%s %s", ssrc, msidStream, kind))
		for _, cand := range s.candidates {
			m.WithValueAttribute("candidate", cand)
		}
		m.WithPropertyAttribute("end-of-candidates")
		sd.WithMedia(m)
	}
	if o.bundle {
		sd.Attributes = append([]sdp.Attribute{{Key: "group", Value: "BUNDLE " + strings.Join(bundle, " ")}}, sd.Attributes...)
	}
	b, err := sd.Marshal()
	if err != nil {
		return "", fmt.Errorf("mediaplane: render answer: %w", err)
	}
	return string(b), nil
}

func midAttr(mid string) []sdp.Attribute {
	if mid == "" {
		return nil
	}
	return []sdp.Attribute{{Key: "mid", Value: mid}}
}

// offeredFeedback is the rtcp-fb of md for pt (or "*") that we accept.
func offeredFeedback(md *sdp.MediaDescription, pt uint8) []string {
	want := strconv.Itoa(int(pt))
	var out []string
	for _, a := range md.Attributes {
		if a.Key != "rtcp-fb" {
			continue
		}
		p, fb, ok := strings.Cut(a.Value, " ")
		fb = strings.Join(strings.Fields(fb), " ")
		if ok && (p == want || p == "*") && slices.Contains(rtcpFeedback, fb) && !slices.Contains(out, fb) {
			out = append(out, fb)
		}
	}
	return out
}
