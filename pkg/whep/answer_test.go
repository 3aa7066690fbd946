package whep

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// TestAnswerCodec checks that the answer carries only H.264, with the
// viewer's payload type and a profile the viewer offered.
func TestAnswerCodec(t *testing.T) {
	src := newTestSource()
	src.publish("live/cam1")
	_, hs := startServer(t, src, nil)
	cases := []struct {
		name    string
		codecs  []webrtc.RTPCodecParameters
		wantPT  int
		profile string
	}{
		{"browser-like default set", nil, -1, "42e01f"},
		{"42e01f preferred over 4d001f", []webrtc.RTPCodecParameters{h264Codec(120, "4d001f", 1), h264Codec(121, "42e01f", 1)}, 121, "42e01f"},
		{"only 42001f offered", []webrtc.RTPCodecParameters{h264Codec(110, "42001f", 1), h264Codec(111, "42001f", 0)}, 110, "42001f"},
		{"main only", []webrtc.RTPCodecParameters{h264Codec(127, "4d0032", 1)}, 127, "4d0032"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			off := testkit.Offer(t, testkit.OfferOptions{Codecs: c.codecs})
			resp, body := post(t, hs.URL+"/live/cam1/whep", "application/sdp", off.SDP)
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("got %d %q", resp.StatusCode, body)
			}
			var sd sdp.SessionDescription
			if err := sd.UnmarshalString(body); err != nil {
				t.Fatal(err)
			}
			md := sd.MediaDescriptions[0]
			if len(md.MediaName.Formats) != 1 {
				t.Fatalf("answer offers %d payload types %v, want exactly one", len(md.MediaName.Formats), md.MediaName.Formats)
			}
			pt := md.MediaName.Formats[0]
			if c.wantPT >= 0 && pt != fmt.Sprint(c.wantPT) {
				t.Errorf("payload type %s, want %d", pt, c.wantPT)
			}
			rtpmap, _ := md.Attribute("rtpmap")
			if rtpmap != pt+" H264/90000" {
				t.Errorf("rtpmap %q", rtpmap)
			}
			fmtpLine, _ := md.Attribute("fmtp")
			if want := pt + " level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=" + c.profile; fmtpLine != want {
				t.Errorf("fmtp %q, want %q", fmtpLine, want)
			}
			if !strings.Contains(off.SDP, "profile-level-id="+c.profile) {
				t.Errorf("answered profile %s was not offered", c.profile)
			}
			if !strings.Contains(body, "a=rtcp-fb:"+pt+" nack\r\n") {
				t.Errorf("answer lacks generic NACK feedback:\n%s", body)
			}
			if err := off.PC.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: body}); err != nil {
				t.Errorf("the offerer rejects the answer: %v", err)
			}
		})
	}
}
