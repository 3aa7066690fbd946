package mediaplane

import (
	"context"
	"crypto/rand"
	"crypto/sha512"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pion/sdp/v3"
	"github.com/pion/stun/v4"

	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

// msidStream is the MediaStream both tracks belong to: browsers keep lip
// sync only between the tracks of one stream.
const msidStream = "srtwhep"

// rtcpFeedback is the feedback the answer may accept, when offered: what
// the sender acts on or at least reads (receiver-side estimates).
var rtcpFeedback = []string{"nack", "nack pli", "ccm fir", "goog-remb"}

// tccURI is the transport-wide sequence number extension the answer
// carries when the offer negotiates transport-cc (pkg/rtpsend stamps it
// and reads the feedback).
const tccURI = sdpoffer.TransportCCURI

// accepted is what answering takes from the viewer's offer: the sections
// this plane sends on and the fingerprints the DTLS handshake checks.
type accepted struct {
	o            *sdpoffer.Offer
	fingerprints remoteFingerprint
	audio        int // index of the audio section answered, -1 for none
	// tcc is the transport-wide congestion control answered (the
	// sender stamps what the same decision says, sdpoffer.TransportCC).
	tcc sdpoffer.TransportCC
}

// NewViewer answers a viewer's offer (a browser's: BUNDLE, rtcp-mux,
// DTLS role actpass; o comes from sdpoffer.Parse) and returns the viewer
// with the answer: ICE-lite, every candidate of the shared socket, our
// fingerprint, setup:passive, one sendonly video section (the offer's
// chosen one) with cfg.Video and, when cfg.Audio is set and the offer
// bundles, the offer's chosen audio section with Opus; every other
// section is rejected. What this plane cannot serve is an
// *sdpoffer.Error.
func (s *Server) NewViewer(o *sdpoffer.Offer, cfg ViewerConfig) (*Viewer, string, error) {
	a, err := accept(o, cfg)
	if err != nil {
		return nil, "", err
	}
	video := o.VideoSection()
	v := &Viewer{
		srv: s, cfg: cfg, fp: a.fingerprints, video: randomSSRC(0),
		created: time.Now(), connected: make(chan struct{}), done: make(chan struct{}),
	}
	if a.audio >= 0 {
		v.audio = randomSSRC(v.video)
	}
	c := newCreds(v, video.ICE.Ufrag)
	c.remoteKey = stun.NewShortTermIntegrity(video.ICE.Pwd)
	v.answerUfrag = c.ufrag
	v.creds = c
	answer, err := s.answer(a, v, c)
	if err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, "", plane.ErrServerClosed
	}
	v.ctx, v.cancel = context.WithCancel(s.ctx)
	s.byUfrag[c.ufrag] = c
	s.viewers[v] = struct{}{}
	return v, answer, nil
}

// AnswerUfrag is our ICE ufrag in the answer NewViewer returned, so the
// caller need not parse its own answer back for it (WHEP's ETag). An ICE
// restart's ufrag is what RestartICE returns.
func (v *Viewer) AnswerUfrag() string { return v.answerUfrag }

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

// accept checks what this plane needs of the offer beyond what Parse
// checked; the codecs were picked from the offer by the caller and are
// only checked to be offered.
func accept(o *sdpoffer.Offer, cfg ViewerConfig) (accepted, error) {
	a := accepted{o: o, audio: -1}
	// Without BUNDLE each section would need a transport of its own; the
	// viewer gets video alone then.
	if o.Audio >= 0 && cfg.Audio != nil && o.Bundled() {
		a.audio = o.Audio
	}
	for _, i := range []int{o.Video, a.audio} {
		if i < 0 {
			continue
		}
		sec := &o.Sections[i]
		if sec.Mid == "" && o.Bundled() {
			return accepted{}, sdpoffer.Errorf("offer's %s m-section has no a=mid, which BUNDLE needs", sec.Kind)
		}
		if !sec.RTCPMux {
			return accepted{}, sdpoffer.Errorf("offer's %s m-section lacks a=rtcp-mux: this server multiplexes RTCP with RTP (RFC 8035)", sec.Kind)
		}
		if sec.Setup != "" && sec.Setup != "actpass" && sec.Setup != "active" {
			return accepted{}, sdpoffer.Errorf("offer has a=setup:%s; this server is always the DTLS server, so offer actpass or active", sec.Setup)
		}
	}
	video := o.VideoSection()
	if !video.Offers(cfg.Video.PayloadType) {
		return accepted{}, sdpoffer.Errorf("payload type %d is not offered in the video m-section", cfg.Video.PayloadType)
	}
	if a.audio >= 0 && !o.Sections[a.audio].Offers(cfg.Audio.PayloadType) {
		return accepted{}, sdpoffer.Errorf("payload type %d is not offered in the audio m-section", cfg.Audio.PayloadType)
	}
	if a.audio >= 0 {
		a.tcc = o.TransportCC(cfg.Video.PayloadType, cfg.Audio.PayloadType)
	} else {
		a.tcc = o.TransportCC(cfg.Video.PayloadType, 0)
		a.tcc.Audio = false
	}
	var err error
	if a.fingerprints, err = parseFingerprints(video.Fingerprints); err != nil {
		return accepted{}, err
	}
	return a, nil
}

// parseFingerprints takes the video section's fingerprints (its own, or
// else the session's; Parse saw at least one). Only the SHA-2 family is
// accepted: JSEP requires sha-256, and a weaker hash would let a forged
// certificate through.
func parseFingerprints(fps []sdpoffer.Fingerprint) (remoteFingerprint, error) {
	var fp remoteFingerprint
	for _, f := range fps {
		var h func([]byte) []byte
		switch f.Hash {
		case "sha-256":
			h = sha256Sum
		case "sha-384":
			h = func(b []byte) []byte { s := sha512.Sum384(b); return s[:] }
		case "sha-512":
			h = func(b []byte) []byte { s := sha512.Sum512(b); return s[:] }
		default:
			continue
		}
		fp = append(fp, fingerprintValue{hash: h, value: strings.ToUpper(f.Value)})
	}
	if len(fp) == 0 {
		return nil, sdpoffer.Errorf("offer's fingerprints use no hash this server accepts (sha-256, sha-384, sha-512)")
	}
	return fp, nil
}

// answer renders the SDP answer for a.
func (s *Server) answer(a accepted, v *Viewer, c *iceCreds) (string, error) {
	sd, err := sdp.NewJSEPSessionDescription(false)
	if err != nil {
		return "", err
	}
	sd.WithPropertyAttribute("ice-lite")
	var bundle []string
	cname := randomICEString(16)
	for i := range a.o.Sections {
		sec := &a.o.Sections[i]
		mid := sec.Mid
		if i != a.o.Video && i != a.audio {
			// Rejected: port 0 and its mid (JSEP §5.3.1). An RTP section
			// lists the static format 0, as pion and browsers answer: the
			// offer's dynamic payload types would need their rtpmap
			// lines, and pion refuses an answer whose formats lack them.
			formats := sec.Formats
			if slices.Contains(sec.Protos, "RTP") {
				formats = []string{"0"}
			}
			sd.WithMedia(&sdp.MediaDescription{
				MediaName: sdp.MediaName{Media: sec.Kind, Port: sdp.RangedPort{Value: 0},
					Protos: sec.Protos, Formats: formats},
				ConnectionInformation: &sdp.ConnectionInformation{NetworkType: "IN", AddressType: "IP4",
					Address: &sdp.Address{Address: "0.0.0.0"}},
				Attributes: midAttr(mid),
			})
			continue
		}
		bundle = append(bundle, mid)
		kind, ssrc, codec := "video", v.video, v.cfg.Video
		name, clock, channels := v.cfg.Video.Video.String(), uint32(90000), uint16(0)
		tcc := a.tcc.ID != 0
		if i == a.audio {
			kind, ssrc, codec = "audio", v.audio, *v.cfg.Audio
			name, clock, channels = "opus", 48000, 2
			tcc = a.tcc.Audio
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
		if sec.RTCPRsize {
			m.WithPropertyAttribute("rtcp-rsize")
		}
		m.WithCodec(codec.PayloadType, name, clock, channels, codec.Fmtp)
		if tcc {
			m.WithValueAttribute("extmap", fmt.Sprintf("%d %s", a.tcc.ID, tccURI))
		}
		for _, fb := range acceptedFeedback(sec, codec.PayloadType, tcc) {
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
	if a.o.Bundled() {
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

// acceptedFeedback is the rtcp-fb offered in sec for pt (or "*") that
// we accept, in offer order; transport-cc only where the section
// negotiates the transport-wide sequence number too (tcc).
func acceptedFeedback(sec *sdpoffer.Section, pt uint8, tcc bool) []string {
	var out []string
	for _, fb := range sec.FeedbackFor(pt) {
		if slices.Contains(rtcpFeedback, fb) || tcc && fb == "transport-cc" {
			out = append(out, fb)
		}
	}
	return out
}
