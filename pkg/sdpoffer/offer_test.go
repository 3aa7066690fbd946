package sdpoffer

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/pkg/av"
)

// summary renders what the consumers decide from o, one line per offer,
// so the table reads as the decisions it pins down.
func summary(o *Offer) string {
	var b strings.Builder
	fmt.Fprintf(&b, "bundle=%s video=%d", orDash(strings.Join(o.Bundle, ",")), o.Video)
	v := o.VideoSection()
	if o.VideoCodec == av.CodecH265 {
		fmt.Fprintf(&b, " h265=%d/%s", v.H265.PT, v.H265.Fmtp)
	} else {
		fmt.Fprintf(&b, " h264=%d/%s", v.H264.PT, v.H264.ProfileLevelID())
	}
	if v.RTX != nil {
		fmt.Fprintf(&b, " rtx=%d", v.RTX.PT)
	} else {
		b.WriteString(" rtx=-")
	}
	if a := o.AudioSection(); a != nil {
		fmt.Fprintf(&b, " audio=%d opus=%d", o.Audio, a.Opus.PT)
	} else {
		b.WriteString(" audio=-")
	}
	fmt.Fprintf(&b, " ice=%s/%s fp=%s setup=%s", v.ICE.Ufrag, v.ICE.Pwd, v.Fingerprints[0].Hash, v.Setup)
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// TestParse: each offer of the table is parsed to the decisions it
// expects, or refused with exactly the message the viewer gets.
func TestParse(t *testing.T) {
	for _, tc := range offerCases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(tc.offer)
			if tc.err {
				var oe *Error
				if !errors.As(err, &oe) || err.Error() != tc.want {
					t.Fatalf("err = %v, want *Error %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(o); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestChromiumModel: every field of the typed model for Chromium's
// offer, as the answer builders read them.
func TestChromiumModel(t *testing.T) {
	o, err := Parse(chromeOffer)
	if err != nil {
		t.Fatal(err)
	}
	fp := []Fingerprint{{Hash: "sha-256", Value: "19:E2:1C:3B:4B:9F:81:E6:B8:5C:F4:A5:A8:D8:73:04:BB:05:2F:70:9F:04:A9:0E:05:E9:26:33:E8:70:88:A2"}}
	ice := ICE{Ufrag: "EsAw", Pwd: "P2uYro0UCOQ4zxjKXaWCBui1", Options: []string{"trickle"}}
	if len(o.Sections) != 2 || !reflect.DeepEqual(o.Bundle, []string{"0", "1"}) || o.ICE.Ufrag != "" || o.Fingerprints != nil {
		t.Fatalf("session: %d sections, bundle %q, ICE %+v, fingerprints %v", len(o.Sections), o.Bundle, o.ICE, o.Fingerprints)
	}
	v, a := o.Sections[0], o.Sections[1]
	if v.Kind != "video" || v.Port != 9 || v.Mid != "0" || v.Direction != RecvOnly || v.BundleOnly || !v.RTCPMux || !v.RTCPRsize ||
		!reflect.DeepEqual(v.Protos, []string{"UDP", "TLS", "RTP", "SAVPF"}) || len(v.Formats) != 8 || v.Setup != "actpass" ||
		!reflect.DeepEqual(v.ICE, ice) || !reflect.DeepEqual(v.Fingerprints, fp) || v.Candidates != nil {
		t.Errorf("video section %+v", v)
	}
	if w := []string{"1 urn:ietf:params:rtp-hdrext:toffset", "3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"}; !reflect.DeepEqual(v.Extmap, w) {
		t.Errorf("extmap %q", v.Extmap)
	}
	var pts []uint8
	for _, c := range v.Codecs {
		pts = append(pts, c.PT)
	}
	if !reflect.DeepEqual(pts, []uint8{96, 97, 102, 103, 106, 107, 127, 125}) {
		t.Errorf("codecs %v", pts)
	}
	h := Codec{PT: 106, Name: "H264", Clock: 90000, Fmtp: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f",
		Params: map[string]string{"level-asymmetry-allowed": "1", "packetization-mode": "1", "profile-level-id": "42e01f"}}
	if !reflect.DeepEqual(*v.H264, h) || o.H264().PT != 106 {
		t.Errorf("H.264 %+v, want %+v", *v.H264, h)
	}
	if v.RTX == nil || v.RTX.PT != 107 || v.RTX.Params["apt"] != "106" {
		t.Errorf("rtx %+v", v.RTX)
	}
	if w := []string{"goog-remb", "transport-cc", "ccm fir", "nack", "nack pli"}; !reflect.DeepEqual(v.FeedbackFor(106), w) {
		t.Errorf("feedback for 106 %q, want %q", v.FeedbackFor(106), w)
	}
	if !v.Offers(127) || v.Offers(111) {
		t.Error("Offers disagrees with the m-line")
	}
	if a.Kind != "audio" || a.Mid != "1" || a.Opus == nil || a.Opus.PT != 111 || a.Opus.Channels != 2 || a.Opus.Fmtp != "minptime=10;useinbandfec=1" ||
		a.H264 != nil || o.AudioSection() != &o.Sections[1] {
		t.Errorf("audio section %+v", a)
	}
}

// TestSessionLevel: credentials, fingerprint and setup at session level
// reach each section, and a section's own win.
func TestSessionLevel(t *testing.T) {
	raw := sessionHead + "a=setup:active\r\n" + sessionCreds + "a=ice-options:trickle ice2\r\n" +
		h264Only("v", "42e01f") + "a=ice-ufrag:mEdia\r\na=candidate:1 1 udp 2122260223 192.0.2.1 61764 typ host\r\n"
	o, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	v := o.VideoSection()
	if want := (ICE{Ufrag: "mEdia", Pwd: "sessionpasswordsessionpass", Options: []string{"trickle", "ice2"}}); !reflect.DeepEqual(v.ICE, want) {
		t.Errorf("ICE %+v, want %+v", v.ICE, want)
	}
	if v.Setup != "active" || len(v.Fingerprints) != 1 || o.Setup != "active" {
		t.Errorf("setup %q, fingerprints %v", v.Setup, v.Fingerprints)
	}
	if want := []string{"1 1 udp 2122260223 192.0.2.1 61764 typ host"}; !reflect.DeepEqual(v.Candidates, want) {
		t.Errorf("candidates %q", v.Candidates)
	}
}

// TestWithICE: a restart's credentials replace the old everywhere, in a
// copy.
func TestWithICE(t *testing.T) {
	o, err := Parse(chromeOffer)
	if err != nil {
		t.Fatal(err)
	}
	r := o.WithICE("NEW", "NEWPWD")
	for i, s := range r.Sections {
		if s.ICE.Ufrag != "NEW" || s.ICE.Pwd != "NEWPWD" || o.Sections[i].ICE.Ufrag != "EsAw" {
			t.Fatalf("section %d: restarted %+v, original %+v", i, s.ICE, o.Sections[i].ICE)
		}
	}
	if r.H264().PT != 106 || r.ICE.Ufrag != "NEW" {
		t.Fatalf("restarted offer %+v", r)
	}
}

// TestHugeOffers: offers near MaxBytes shaped to make a parser repeat
// work (one long m-line, many sections, many fmtp or rtcp-fb lines) are
// parsed or refused in one pass, with a short answer.
func TestHugeOffers(t *testing.T) {
	head := sessionHead + sessionCreds
	offers := map[string]string{
		"formats":  head + "m=video 9 UDP/TLS/RTP/SAVPF " + strings.Repeat("96 ", 300000) + "\r\na=recvonly\r\n",
		"sections": head + strings.Repeat("m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=sendonly\r\n", 20000),
		"fmtp":     head + "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 H264/90000\r\n" + strings.Repeat("a=fmtp:96 a=1;b=2;c=3;d=4\r\n", 30000),
		"rtcp-fb":  head + h264Only("v", "42e01f") + strings.Repeat("a=rtcp-fb:* ccm  fir\r\n", 40000),
		"params":   head + "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 " + strings.Repeat("x;", 400000) + "\r\n",
	}
	for name, raw := range offers {
		o, err := Parse(raw)
		switch {
		case len(raw) > MaxBytes:
			t.Fatalf("%s: %d bytes, more than MaxBytes: the case tests nothing", name, len(raw))
		case err != nil && len(err.Error()) > 300:
			t.Errorf("%s: a %d-byte error", name, len(err.Error()))
		case err == nil && len(o.VideoSection().FeedbackFor(100)) != 2:
			t.Errorf("%s: feedback %q, want its own nack and ccm fir once", name, o.VideoSection().FeedbackFor(100))
		}
	}
}

// FuzzOffer: whatever the input, Parse returns an *Error of one line or
// an offer whose chosen sections hold what the answer builders index.
func FuzzOffer(f *testing.F) {
	for _, tc := range offerCases {
		if len(tc.offer) < 64<<10 {
			f.Add(tc.offer)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := Parse(s)
		if err != nil {
			var oe *Error
			if !errors.As(err, &oe) {
				t.Fatalf("error %T is not an *Error: %v", err, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			return
		}
		v := o.VideoSection()
		sent := o.Sent()
		if v.Kind != "video" || (v.H264 == nil && v.H265 == nil) || v.ICE.Ufrag == "" || v.ICE.Pwd == "" || len(v.Fingerprints) == 0 ||
			!v.Direction.Receives() || (v.H264 != nil && v.H264.ProfileLevelID() == "") || !v.Offers(sent.PT) {
			t.Fatalf("accepted an offer the answer cannot use: %+v", v)
		}
		if a := o.AudioSection(); a != nil && (a.Kind != "audio" || a.Opus == nil || !a.Offers(a.Opus.PT)) {
			t.Fatalf("audio section without Opus: %+v", a)
		}
	})
}

// TestFuzzCorpusOffer writes the table's offers as FuzzOffer's checked-in
// corpus when asked to (see testkit.SeedCorpus).
func TestFuzzCorpusOffer(t *testing.T) {
	var seeds [][]any
	for _, tc := range offerCases {
		if len(tc.offer) < 64<<10 {
			seeds = append(seeds, []any{tc.offer})
		}
	}
	testkit.SeedCorpus(t, "FuzzOffer", seeds...)
}
