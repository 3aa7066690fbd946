package pionplane

import (
	"strings"
	"testing"

	"github.com/pion/sdp/v3"
)

// TestPionOffer: what pion is given of an offer. Sections are told apart
// by mid; each is summarised as port, direction attributes and whether it
// is bundle-only.
func TestPionOffer(t *testing.T) {
	const head = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
	sec := func(kind, port, mid string, attrs ...string) string {
		s := "m=" + kind + " " + port + " UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\na=mid:" + mid + "\r\n"
		if kind == "application" {
			s = "m=application " + port + " UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=mid:" + mid + "\r\n"
		}
		for _, a := range attrs {
			s += "a=" + a + "\r\n"
		}
		return s
	}
	cases := []struct{ name, offer, want string }{
		{"whip-whep's sendrecv, audio first", head + "a=group:BUNDLE 0 1\r\n" + sec("audio", "9", "0", "sendrecv") + sec("video", "9", "1", "sendrecv"),
			"BUNDLE 0 1 | 0: 9 recvonly | 1: 9 recvonly"},
		{"no direction means sendrecv", head + sec("video", "9", "v"),
			" | v: 9 recvonly"},
		{"recvonly, sendonly, inactive kept", head + sec("video", "9", "a", "recvonly") + sec("video", "9", "b", "sendonly") + sec("audio", "9", "c", "inactive"),
			" | a: 9 recvonly | b: 9 sendonly | c: 9 inactive"},
		{"bundle-only kept", head + "a=group:BUNDLE 0 1\r\n" + sec("video", "9", "0", "recvonly") + sec("audio", "0", "1", "bundle-only", "recvonly"),
			"BUNDLE 0 1 | 0: 9 recvonly | 1: 0 bundle-only recvonly"},
		{"data channel rejected", head + "a=group:BUNDLE 0 1 2\r\n" + sec("video", "9", "0", "recvonly") + sec("application", "0", "1", "bundle-only") +
			sec("audio", "0", "2", "bundle-only", "recvonly"),
			"BUNDLE 0 2 | 0: 9 recvonly | 1: 0 | 2: 0 bundle-only recvonly"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := pionOffer(c.offer)
			if err != nil {
				t.Fatal(err)
			}
			var sd sdp.SessionDescription
			if err := sd.UnmarshalString(got); err != nil {
				t.Fatalf("pion's offer does not parse: %v\n%s", err, got)
			}
			group, _ := sd.Attribute("group")
			parts := []string{group}
			for _, md := range sd.MediaDescriptions {
				mid, _ := md.Attribute("mid")
				p := mid + ": " + md.MediaName.Port.String()
				for _, a := range md.Attributes {
					switch a.Key {
					case "sendrecv", "recvonly", "sendonly", "inactive", "bundle-only":
						p += " " + a.Key
					}
				}
				parts = append(parts, p)
			}
			if s := strings.Join(parts, " | "); s != c.want {
				t.Errorf("got  %s\nwant %s", s, c.want)
			}
		})
	}
	if _, err := pionOffer("hello"); err == nil {
		t.Error("a body that is not SDP was rewritten")
	}
}
