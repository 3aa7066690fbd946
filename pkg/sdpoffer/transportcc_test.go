package sdpoffer

import (
	"strings"
	"testing"
)

// TestTransportCC: transport-wide congestion control is negotiated only
// when the video section offers both the header extension (an ID the
// one-byte form carries, in a direction the viewer receives) and
// transport-cc feedback for the payload type answered; audio joins only
// with the same ID.
func TestTransportCC(t *testing.T) {
	const ext3 = "a=extmap:3 " + TransportCCURI + "\r\n"
	audioExt := func(line string) string {
		return strings.Replace(chromeOffer, "a=mid:1\r\na=extmap:14", "a=mid:1\r\n"+line+"a=extmap:14", 1)
	}
	videoExt := func(line string) string { return strings.Replace(chromeOffer, ext3, line, 1) }
	noFeedback := strings.ReplaceAll(strings.ReplaceAll(chromeOffer, "a=rtcp-fb:102 transport-cc\r\n", ""), "a=rtcp-fb:106 transport-cc\r\n", "")
	cases := []struct {
		name, offer string
		want        TransportCC
	}{
		{"Chromium: video (its audio section lacks the extension here)", chromeOffer, TransportCC{ID: 3}},
		{"audio with the same ID", audioExt(ext3), TransportCC{ID: 3, Audio: true}},
		{"audio with another ID", audioExt("a=extmap:4 " + TransportCCURI + "\r\n"), TransportCC{ID: 3}},
		{"no extension", videoExt(""), TransportCC{}},
		{"no feedback", noFeedback, TransportCC{}},
		{"feedback for every payload type", strings.Replace(noFeedback, "a=rtpmap:102", "a=rtcp-fb:* transport-cc\r\na=rtpmap:102", 1), TransportCC{ID: 3}},
		{"direction recvonly", videoExt("a=extmap:3/recvonly " + TransportCCURI + "\r\n"), TransportCC{ID: 3}},
		{"direction sendonly", videoExt("a=extmap:3/sendonly " + TransportCCURI + "\r\n"), TransportCC{}},
		{"two-byte ID", videoExt("a=extmap:15 " + TransportCCURI + "\r\n"), TransportCC{}},
		{"garbage ID", videoExt("a=extmap:x " + TransportCCURI + "\r\n"), TransportCC{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(tc.offer)
			if err != nil {
				t.Fatal(err)
			}
			if got := o.TransportCC(o.Sent().PT, o.AudioSection().Opus.PT); got != tc.want {
				t.Fatalf("TransportCC = %+v, want %+v", got, tc.want)
			}
		})
	}
}
