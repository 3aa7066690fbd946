package mediaplane

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/pion/sdp/v3"

	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

const testFingerprint = "AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99"

// TestAnswer: the answer to a browser's offer is what a browser needs
// from an ICE-lite server, and nothing it did not offer.
func TestAnswer(t *testing.T) {
	srv, _ := newServer(t, func(c *Config) { c.PublicIPs = []netip.Addr{netip.MustParseAddr("203.0.113.7")} })
	v, sd := answerTo(t, srv, browserOffer("vwUfrag", "viewerpasswordviewerpassword", testFingerprint), h264Codec)
	if _, ok := sd.Attribute("ice-lite"); !ok {
		t.Error("no a=ice-lite")
	}
	if g, _ := sd.Attribute("group"); g != "BUNDLE 0" {
		t.Errorf("a=group:%s, want BUNDLE 0 (the data channel is rejected)", g)
	}
	if len(sd.MediaDescriptions) != 2 {
		t.Fatalf("%d m-sections, want the offer's 2", len(sd.MediaDescriptions))
	}
	video, dc := sd.MediaDescriptions[0], sd.MediaDescriptions[1]
	if video.MediaName.Port.Value != 9 || !slices.Equal(video.MediaName.Formats, []string{"102"}) {
		t.Errorf("video m-line %v", video.MediaName)
	}
	if dc.MediaName.Port.Value != 0 || dc.MediaName.Media != "application" {
		t.Errorf("data channel m-line %v, want port 0", dc.MediaName)
	}
	want := map[string]string{
		"mid": "0", "setup": "passive", "fingerprint": "sha-256 " + srv.Fingerprint(),
		"rtpmap": "102 H264/90000", "fmtp": "102 " + h264Codec.Video.Fmtp, "msid": "srtwhep video",
	}
	for k, w := range want {
		if got, _ := video.Attribute(k); got != w {
			t.Errorf("a=%s:%s, want %s", k, got, w)
		}
	}
	for _, k := range []string{"sendonly", "rtcp-mux", "rtcp-rsize", "end-of-candidates"} {
		if _, ok := video.Attribute(k); !ok {
			t.Errorf("no a=%s", k)
		}
	}
	var fbs, cands, ssrcs []string
	for _, a := range video.Attributes {
		switch a.Key {
		case "rtcp-fb":
			fbs = append(fbs, a.Value)
		case "candidate":
			cands = append(cands, a.Value)
		case "ssrc":
			ssrcs = append(ssrcs, a.Value)
		}
	}
	if w := []string{"102 goog-remb", "102 ccm fir", "102 nack", "102 nack pli"}; !slices.Equal(fbs, w) {
		t.Errorf("rtcp-fb %q, want %q (transport-cc is not ours to answer)", fbs, w)
	}
	port := srv.LocalAddr().Port
	if len(cands) != 2 || !strings.Contains(cands[0], fmt.Sprintf(" 203.0.113.7 %d typ host", port)) ||
		!strings.Contains(cands[1], fmt.Sprintf(" 127.0.0.1 %d typ host", port)) {
		t.Errorf("candidates %q, want the public IP first, then the socket's", cands)
	}
	if len(ssrcs) == 0 || !strings.HasPrefix(ssrcs[0], fmt.Sprint(v.VideoSSRC())+" cname:") {
		t.Errorf("a=ssrc %q, want the video SSRC %d", ssrcs, v.VideoSSRC())
	}
	if v.AudioSSRC() != 0 {
		t.Error("an audio SSRC without audio")
	}
	if u, _ := video.Attribute("ice-ufrag"); v.AnswerUfrag() != u || u == "" {
		t.Errorf("AnswerUfrag %q, the answer's a=ice-ufrag:%s", v.AnswerUfrag(), u)
	}
}

// answerTo answers offer and parses the answer; the viewer closes with
// the test.
func answerTo(t *testing.T, srv *Server, offer string, vc ViewerConfig) (*Viewer, sdp.SessionDescription) {
	t.Helper()
	v, answer, err := srv.NewViewer(mustOffer(t, offer), vc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Close)
	var sd sdp.SessionDescription
	if err := sd.UnmarshalString(answer); err != nil {
		t.Fatalf("answer does not parse: %v\n%s", err, answer)
	}
	return v, sd
}

// mustOffer parses raw as the WHEP handler does before it asks for an
// answer.
func mustOffer(t testing.TB, raw string) *sdpoffer.Offer {
	t.Helper()
	o, err := sdpoffer.Parse(raw)
	if err != nil {
		t.Fatalf("offer: %v\n%s", err, raw)
	}
	return o
}

// TestOfferErrors: an offer this plane cannot serve is refused with an
// *sdpoffer.Error that names the problem. Faults of any offer (malformed,
// no video, no credentials or fingerprint) are sdpoffer's table.
func TestOfferErrors(t *testing.T) {
	srv, _ := newServer(t, nil)
	good := browserOffer("vwUfrag", "viewerpasswordviewerpassword", testFingerprint)
	cases := []struct {
		name, offer string
		vc          ViewerConfig
		want        string
	}{
		{"no rtcp-mux", strings.Replace(good, "a=rtcp-mux\r\n", "", 1), h264Codec, "rtcp-mux"},
		{"no mid", strings.Replace(good, "a=mid:0\r\n", "", 1), h264Codec, "a=mid"},
		{"setup passive", strings.Replace(good, "a=setup:actpass", "a=setup:passive", 1), h264Codec, "a=setup:passive"},
		{"codec not offered", good, ViewerConfig{Video: Codec{PayloadType: 109}}, "payload type 109"},
		{"weak fingerprint", strings.Replace(good, "a=fingerprint:sha-256", "a=fingerprint:sha-1", 1), h264Codec, "sha-256"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := srv.NewViewer(mustOffer(t, tc.offer), tc.vc)
			var oe *sdpoffer.Error
			if !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want an *sdpoffer.Error mentioning %q", err, tc.want)
			}
		})
	}
	srv.mu.RLock()
	defer srv.mu.RUnlock()
	if len(srv.viewers) != 0 || len(srv.byUfrag) != 0 {
		t.Error("refused offers left viewers behind")
	}
}

// TestAudioNeedsBundle: without BUNDLE the audio section is rejected and
// the viewer gets video alone on one transport.
func TestAudioNeedsBundle(t *testing.T) {
	srv, _ := newServer(t, nil)
	offer := strings.Replace(browserOffer("vwUfrag", "viewerpasswordviewerpassword", testFingerprint), "a=group:BUNDLE 0 1\r\n", "", 1)
	offer = strings.Replace(offer, "m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\na=sctp-port:5000\r\n",
		"m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\na=recvonly\r\na=rtcp-mux\r\na=rtpmap:111 opus/48000/2\r\n", 1)
	vc := h264Codec
	vc.Audio = &Codec{PayloadType: 111, Fmtp: "minptime=10;useinbandfec=1"}
	v, answer, err := srv.NewViewer(mustOffer(t, offer), vc)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if v.AudioSSRC() != 0 || !strings.Contains(answer, "m=audio 0 ") || strings.Contains(answer, "a=group:") {
		t.Errorf("audio SSRC %d; answer:\n%s", v.AudioSSRC(), answer)
	}
}
