package whep

import (
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// A browser-like offer (trimmed from what Chromium sends) and fragments in
// the shapes RFC 8840 and RFC 9725 show.
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

// TestRestartOffer: the restarted offer carries the new credentials in
// its model and keeps the codec, and the original is left as it was; the
// offer's own cases are sdpoffer's.
func TestRestartOffer(t *testing.T) {
	o, err := parseOfferFor(chromeOffer, av.StreamInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if o.payloadType != 106 || o.sent.ProfileLevelID() != "42e01f" || o.mid != "0" || o.ufrag != "EsAw" || o.pwd != "P2uYro0UCOQ4zxjKXaWCBui1" || o.audio {
		t.Fatalf("got %+v", o)
	}
	if o2 := o.restarted("NEW", "NEWPWD"); o2.ufrag != "NEW" || o2.pwd != "NEWPWD" || o2.payloadType != 106 ||
		o2.model.VideoSection().ICE.Ufrag != "NEW" || o.model.VideoSection().ICE.Ufrag != "EsAw" {
		t.Fatalf("restarted %+v", o2)
	}
}

// parseOfferFor is the offer the handler answers for raw on a path
// publishing info.
func parseOfferFor(raw string, info av.StreamInfo) (offer, error) {
	m, err := parseOffer(raw)
	if err != nil {
		return offer{}, err
	}
	return offerFor(m, info)
}

func TestParseFrag(t *testing.T) {
	f, err := parseFrag("a=ice-ufrag:EsAw\r\na=ice-pwd:P2uY\r\nm=audio 9 RTP/AVP 0\r\na=mid:0\r\n" +
		"a=candidate:1387637174 1 udp 2122260223 192.0.2.1 61764 typ host generation 0 ufrag EsAw network-id 1\r\n" +
		"a=end-of-candidates\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if f.ufrag != "EsAw" || f.pwd != "P2uY" || len(f.candidates) != 1 || !f.end ||
		!strings.HasPrefix(f.candidates[0], "candidate:1387637174 1 udp") {
		t.Fatalf("got %+v", f)
	}
}

func FuzzParseFrag(f *testing.F) {
	f.Add("a=ice-ufrag:a\r\na=ice-pwd:b\r\na=candidate:1 1 udp 1 127.0.0.1 1 typ host\r\na=end-of-candidates\r\n")
	f.Add("hello")
	f.Add("\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		fr, err := parseFrag(s)
		if err != nil {
			return
		}
		for _, c := range fr.candidates {
			if !strings.HasPrefix(c, "candidate:") {
				t.Fatalf("candidate %q lacks its prefix", c)
			}
		}
	})
}
