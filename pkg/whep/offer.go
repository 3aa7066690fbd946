package whep

import (
	"errors"
	"fmt"
	"strings"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

// offer is what a session keeps of the viewer's offer: the one typed
// model (pkg/sdpoffer), which the plane answers from (plane.Offer.Model),
// and the decisions read from it that the handler and the session use.
// ufrag and pwd are the viewer's ICE credentials of the current
// generation: an ICE restart replaces them (and model with them).
type offer struct {
	model       *sdpoffer.Offer
	codec       av.Codec // the video codec sent (sdpoffer.Offer.VideoCodec)
	payloadType uint8    // the viewer's payload type for it
	sent        sdpoffer.Codec
	mid         string // mid of the video m-section we answer
	ufrag, pwd  string
	// audio is set when the viewer can receive Opus; audioPT is its
	// payload type for it.
	audio   bool
	audioPT uint8
}

// fmtp returns the fmtp line of the answer: for H.264 the viewer's own
// profile-level-id (of the payload type whose profile matches the
// stream's), so a strict decoder (Safari) accepts the stream; for H.265
// the viewer's own profile, tier and level.
func (o offer) fmtp() string {
	if o.codec == av.CodecH265 {
		return plane.H265Fmtp(o.sent.Params)
	}
	return plane.H264Fmtp(o.sent.ProfileLevelID())
}

// parseOffer checks that raw is an SDP offer a WHEP viewer can use and
// picks the codec to answer with, for a stream not known yet. Errors are
// *sdpoffer.Error and say what is wrong.
func parseOffer(raw string) (*sdpoffer.Offer, error) {
	return sdpoffer.Parse(raw)
}

// offerFor is the offer answered for a path publishing info. Errors are
// *sdpoffer.CodecError: the viewer cannot take the path's video.
func offerFor(m *sdpoffer.Offer, info av.StreamInfo) (offer, error) {
	m, err := m.ForStream(info)
	if err != nil {
		return offer{}, err
	}
	return offerOf(m), nil
}

func offerOf(m *sdpoffer.Offer) offer {
	v := m.VideoSection()
	sent := m.Sent()
	o := offer{model: m, codec: m.VideoCodec, payloadType: sent.PT, sent: sent, mid: v.Mid,
		ufrag: v.ICE.Ufrag, pwd: v.ICE.Pwd}
	if a := m.AudioSection(); a != nil {
		o.audio, o.audioPT = true, a.Opus.PT
	}
	return o
}

// restarted is o with the viewer's new ICE credentials.
func (o offer) restarted(ufrag, pwd string) offer {
	if o.model != nil {
		o.model = o.model.WithICE(ufrag, pwd)
	}
	o.ufrag, o.pwd = ufrag, pwd
	return o
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

// transcodedReader swaps orig, whose video the viewer cannot take
// (codecErr), for a reader of the path's H.264 rendition when the path
// has one. Otherwise orig is closed and codecErr returned: the viewer is
// refused with it, unless only a reader cap stands in the way
// (atReaderCap: the hub's error, for a 503).
func (s *Server) transcodedReader(path, id string, model *sdpoffer.Offer, orig Reader, codecErr error) (Reader, offer, error) {
	ts := s.cfg.Source
	alt, err := ts.AddTranscodedReader(path, id)
	if atReaderCap(err) {
		// The reader cap counts both renditions' readers, orig among
		// them: at the cap it holds the very slot alt needs. Give it
		// back and ask again; the path's other readers keep its pull.
		orig.Close()
		orig = nil
		alt, err = ts.AddTranscodedReader(path, id)
	}
	// Released only now, so the path cannot lose its last reader (and
	// an edge its pull) in between.
	if orig != nil {
		orig.Close()
	}
	switch {
	case atReaderCap(err):
		return nil, offer{}, err // the viewer could play it: a 503, not a 409
	case err != nil:
		return nil, offer{}, withoutRendition(codecErr, err)
	}
	o, err := offerFor(model, alt.Info())
	if err != nil {
		alt.Close()
		return nil, offer{}, codecErr
	}
	return alt, o, nil
}

// withoutRendition adds the operator's fix to the refusal of a viewer
// without H.265 on an H.265 path that makes no H.264 rendition: on such a
// path ingest makes one unless the path passes video through, so the
// setting to change is known, and it is the one fix that serves every
// browser without touching the encoder.
func withoutRendition(codecErr, renditionErr error) error {
	var ce *sdpoffer.CodecError
	if !errors.As(codecErr, &ce) || !ce.H265 || !errors.Is(renditionErr, hub.ErrNoPublisher) {
		return codecErr
	}
	return fmt.Errorf("%w. This path passes video through (video: passthrough): "+
		"the operator can set video: auto for it, and the server converts H.265 to H.264 for browsers like this one", codecErr)
}

// atReaderCap reports whether err is the hub's path or server reader cap.
func atReaderCap(err error) bool {
	return errors.Is(err, hub.ErrPathFull) || errors.Is(err, hub.ErrServerFull)
}
