package mediaplane

import (
	"slices"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

// TestAnswerTransportCC: the answer carries the transport-wide sequence
// number extension and transport-cc feedback only where the offer has
// both, in each section that negotiated them; an offer without them gets
// neither, as before.
func TestAnswerTransportCC(t *testing.T) {
	srv, _ := newServer(t, nil)
	ext := "a=extmap:5 " + sdpoffer.TransportCCURI + "\r\n"
	base := browserOffer("vwUfrag", "viewerpasswordviewerpassword", testFingerprint)
	// Video, and audio in place of the data channel, both offering
	// transport-cc feedback.
	av := strings.Replace(base, "m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\na=sctp-port:5000\r\n",
		"m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\nEXT1a=recvonly\r\na=rtcp-mux\r\na=rtpmap:111 opus/48000/2\r\na=rtcp-fb:111 transport-cc\r\n", 1)
	withVideoExt := func(s string) string { return strings.Replace(s, "a=mid:0\r\n", "a=mid:0\r\n"+ext, 1) }
	vc := h264Codec
	vc.Audio = &Codec{PayloadType: 111, Fmtp: "minptime=10;useinbandfec=1"}
	cases := []struct {
		name, offer string
		vc          ViewerConfig
		video, aud  bool
	}{
		{"not offered", strings.Replace(av, "EXT1", "", 1), vc, false, false},
		{"feedback without the extension (the video section of browserOffer)", base, h264Codec, false, false},
		{"video only", withVideoExt(strings.Replace(av, "EXT1", "", 1)), vc, true, false},
		{"video and audio", withVideoExt(strings.Replace(av, "EXT1", ext, 1)), vc, true, true},
		{"audio answered without audio", withVideoExt(strings.Replace(av, "EXT1", ext, 1)), h264Codec, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, sd := answerTo(t, srv, tc.offer, tc.vc)
			for i, want := range []bool{tc.video, tc.aud} {
				if i >= len(sd.MediaDescriptions) {
					break
				}
				m := sd.MediaDescriptions[i]
				var extmaps, fbs []string
				for _, a := range m.Attributes {
					switch a.Key {
					case "extmap":
						extmaps = append(extmaps, a.Value)
					case "rtcp-fb":
						fbs = append(fbs, a.Value)
					}
				}
				pt := m.MediaName.Formats[0]
				gotExt := slices.Equal(extmaps, []string{"5 " + sdpoffer.TransportCCURI})
				gotFB := slices.Contains(fbs, pt+" transport-cc")
				if gotExt != want || gotFB != want || !want && len(extmaps) > 0 {
					t.Errorf("%s section: extmap %q, rtcp-fb %q; want transport-cc %v", m.MediaName.Media, extmaps, fbs, want)
				}
			}
		})
	}
}
