package whep

import (
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

// A browser-like offer (trimmed from what Chromium sends).
const chromeOffer = "v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n" +
	"a=group:BUNDLE 0\r\na=msid-semantic: WMS\r\n" +
	"m=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103 106 107 127 125\r\nc=IN IP4 0.0.0.0\r\na=rtcp:9 IN IP4 0.0.0.0\r\n" +
	"a=ice-ufrag:EsAw\r\na=ice-pwd:P2uYro0UCOQ4zxjKXaWCBui1\r\na=ice-options:trickle\r\n" +
	"a=fingerprint:sha-256 19:E2:1C:3B:4B:9F:81:E6:B8:5C:F4:A5:A8:D8:73:04:BB:05:2F:70:9F:04:A9:0E:05:E9:26:33:E8:70:88:A2\r\n" +
	"a=setup:actpass\r\na=mid:0\r\na=recvonly\r\na=rtcp-mux\r\na=rtcp-rsize\r\n" +
	"a=rtpmap:96 VP8/90000\r\na=rtcp-fb:96 nack\r\na=rtpmap:97 rtx/90000\r\na=fmtp:97 apt=96\r\n" +
	"a=rtpmap:102 H264/90000\r\na=rtcp-fb:102 nack\r\na=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f\r\n" +
	"a=rtpmap:103 rtx/90000\r\na=fmtp:103 apt=102\r\n" +
	"a=rtpmap:106 H264/90000\r\na=fmtp:106 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n" +
	"a=rtpmap:107 rtx/90000\r\na=fmtp:107 apt=106\r\n" +
	"a=rtpmap:127 H264/90000\r\na=fmtp:127 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42e01f\r\n" +
	"a=rtpmap:125 H264/90000\r\na=fmtp:125 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f\r\n"

// TestRestartOffer: the video the answer sends is the viewer's payload
// type and profile, and an ICE restart keeps it; the credentials
// themselves are sdpoffer's TestWithICE.
func TestRestartOffer(t *testing.T) {
	m, err := sdpoffer.Parse(chromeOffer)
	if err == nil {
		m, err = m.ForStream(av.StreamInfo{})
	}
	if err != nil {
		t.Fatal(err)
	}
	c := plane.VideoCodec(m)
	if c.PayloadType != 106 || c.Video != av.CodecH264 || !strings.HasSuffix(c.Fmtp, "profile-level-id=42e01f") ||
		m.VideoSection().Mid != "0" || plane.OpusPT(m) != 0 {
		t.Fatalf("got %+v, mid %q, Opus payload type %d", c, m.VideoSection().Mid, plane.OpusPT(m))
	}
	if r := m.WithICE("NEW", "NEWPWD"); plane.VideoCodec(r) != c || r.VideoSection().ICE.Ufrag != "NEW" || m.VideoSection().ICE.Ufrag != "EsAw" {
		t.Fatalf("restarted: %+v, ufrag %q (original's now %q)", plane.VideoCodec(r), r.VideoSection().ICE.Ufrag, m.VideoSection().ICE.Ufrag)
	}
}
