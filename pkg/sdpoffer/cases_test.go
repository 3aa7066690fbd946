package sdpoffer

import (
	"fmt"
	"strings"
)

// The offers of the table: what browsers send (trimmed of lines neither
// consumer reads) and the faults the server must name. One table drives
// TestParse, the fuzz seeds and the checked-in corpus.

const fpLine = "a=fingerprint:sha-256 19:E2:1C:3B:4B:9F:81:E6:B8:5C:F4:A5:A8:D8:73:04:BB:05:2F:70:9F:04:A9:0E:05:E9:26:33:E8:70:88:A2\r\n"

const sessionHead = "v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"

// chromeVideo is Chromium's recvonly video section: VP8, VP9, H.264 in
// four shapes (two packetization modes, two profiles), each with rtx.
const chromeVideo = "m=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103 106 107 127 125\r\nc=IN IP4 0.0.0.0\r\na=rtcp:9 IN IP4 0.0.0.0\r\n" +
	"a=ice-ufrag:EsAw\r\na=ice-pwd:P2uYro0UCOQ4zxjKXaWCBui1\r\na=ice-options:trickle\r\n" + fpLine +
	"a=setup:actpass\r\na=mid:0\r\n" +
	"a=extmap:1 urn:ietf:params:rtp-hdrext:toffset\r\na=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01\r\n" +
	"a=recvonly\r\na=rtcp-mux\r\na=rtcp-rsize\r\n" +
	"a=rtpmap:96 VP8/90000\r\na=rtcp-fb:96 goog-remb\r\na=rtcp-fb:96 nack\r\na=rtpmap:97 rtx/90000\r\na=fmtp:97 apt=96\r\n" +
	"a=rtpmap:102 H264/90000\r\na=rtcp-fb:102 goog-remb\r\na=rtcp-fb:102 transport-cc\r\na=rtcp-fb:102 nack\r\na=rtcp-fb:102 nack pli\r\n" +
	"a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f\r\n" +
	"a=rtpmap:103 rtx/90000\r\na=fmtp:103 apt=102\r\n" +
	"a=rtpmap:106 H264/90000\r\na=rtcp-fb:106 goog-remb\r\na=rtcp-fb:106 transport-cc\r\na=rtcp-fb:106 ccm fir\r\na=rtcp-fb:106 nack\r\na=rtcp-fb:106 nack pli\r\n" +
	"a=fmtp:106 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n" +
	"a=rtpmap:107 rtx/90000\r\na=fmtp:107 apt=106\r\n" +
	"a=rtpmap:127 H264/90000\r\na=fmtp:127 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42e01f\r\n" +
	"a=rtpmap:125 H264/90000\r\na=fmtp:125 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f\r\n"

// chromeAudio is Chromium's recvonly audio section: Opus first, then the
// narrow-band codecs it always lists.
const chromeAudio = "m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126\r\nc=IN IP4 0.0.0.0\r\na=rtcp:9 IN IP4 0.0.0.0\r\n" +
	"a=ice-ufrag:EsAw\r\na=ice-pwd:P2uYro0UCOQ4zxjKXaWCBui1\r\na=ice-options:trickle\r\n" + fpLine +
	"a=setup:actpass\r\na=mid:1\r\na=extmap:14 urn:ietf:params:rtp-hdrext:ssrc-audio-level\r\n" +
	"a=recvonly\r\na=rtcp-mux\r\n" +
	"a=rtpmap:111 opus/48000/2\r\na=rtcp-fb:111 transport-cc\r\na=fmtp:111 minptime=10;useinbandfec=1\r\n" +
	"a=rtpmap:63 red/48000/2\r\na=fmtp:63 111/111\r\na=rtpmap:9 G722/8000\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:8 PCMA/8000\r\n" +
	"a=rtpmap:13 CN/8000\r\na=rtpmap:110 telephone-event/48000\r\na=rtpmap:126 telephone-event/8000\r\n"

// chromeOffer is what Chromium sends for a WHEP player with a recvonly
// video and a recvonly audio transceiver.
const chromeOffer = sessionHead + "a=group:BUNDLE 0 1\r\na=extmap-allow-mixed\r\na=msid-semantic: WMS\r\n" + chromeVideo + chromeAudio

// h264Only is a one-codec video section; profiles are the fmtp's
// profile-level-ids, given payload types 100, 101, ….
func h264Only(mid string, profiles ...string) string {
	pts := make([]string, len(profiles))
	var lines strings.Builder
	for i, p := range profiles {
		pts[i] = fmt.Sprint(100 + i)
		fmt.Fprintf(&lines, "a=rtpmap:%[1]d H264/90000\r\na=rtcp-fb:%[1]d nack\r\n"+
			"a=fmtp:%[1]d level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=%[2]s\r\n", 100+i, p)
	}
	return "m=video 9 UDP/TLS/RTP/SAVPF " + strings.Join(pts, " ") + "\r\nc=IN IP4 0.0.0.0\r\n" +
		"a=mid:" + mid + "\r\na=recvonly\r\na=rtcp-mux\r\n" + lines.String()
}

// h265Only is a video section of H265/90000 payload types 100, 101, …
// with the given fmtp lines.
func h265Only(mid string, fmtps ...string) string {
	pts := make([]string, len(fmtps))
	var lines strings.Builder
	for i, f := range fmtps {
		pts[i] = fmt.Sprint(100 + i)
		fmt.Fprintf(&lines, "a=rtpmap:%[1]d H265/90000\r\na=rtcp-fb:%[1]d nack\r\na=fmtp:%[1]d %[2]s\r\n", 100+i, f)
	}
	return "m=video 9 UDP/TLS/RTP/SAVPF " + strings.Join(pts, " ") + "\r\nc=IN IP4 0.0.0.0\r\n" +
		"a=mid:" + mid + "\r\na=recvonly\r\na=rtcp-mux\r\n" + lines.String()
}

// sessionCreds puts credentials and the fingerprint at session level, as
// pion and some WHEP players do.
const sessionCreds = "a=ice-ufrag:sEss\r\na=ice-pwd:sessionpasswordsessionpass\r\n" + fpLine

type offerCase struct {
	name  string
	offer string
	// want is the summary of the parsed offer (see summary), or the
	// exact error text when err is set.
	want string
	err  bool
}

var offerCases = []offerCase{
	{"chromium video and audio", chromeOffer,
		"bundle=0,1 video=0 h264=106/42e01f rtx=107 audio=1 opus=111 ice=EsAw/P2uYro0UCOQ4zxjKXaWCBui1 fp=sha-256 setup=actpass", false},
	{"audio first", sessionHead + "a=group:BUNDLE 1 0\r\n" + strings.Replace(chromeAudio, "a=mid:1", "a=mid:0", 1) +
		strings.Replace(chromeVideo, "a=mid:0", "a=mid:1", 1),
		"bundle=1,0 video=1 h264=106/42e01f rtx=107 audio=0 opus=111 ice=EsAw/P2uYro0UCOQ4zxjKXaWCBui1 fp=sha-256 setup=actpass", false},
	{"video only", sessionHead + "a=group:BUNDLE 0\r\n" + chromeVideo,
		"bundle=0 video=0 h264=106/42e01f rtx=107 audio=- ice=EsAw/P2uYro0UCOQ4zxjKXaWCBui1 fp=sha-256 setup=actpass", false},
	// 42e01f is preferred wherever it is in the offer; 42001f and 640c1f
	// would do only without it.
	{"profiles 42001f 42e01f 640c1f", sessionHead + sessionCreds + h264Only("v", "42001f", "42e01f", "640c1f"),
		"bundle=- video=0 h264=101/42e01f rtx=- audio=- ice=sEss/sessionpasswordsessionpass fp=sha-256 setup=", false},
	{"profiles 640c1f 42001f", sessionHead + sessionCreds + h264Only("v", "640c1f", "42001f"),
		"bundle=- video=0 h264=101/42001f rtx=- audio=- ice=sEss/sessionpasswordsessionpass fp=sha-256 setup=", false},
	{"profile 640c1f alone", sessionHead + sessionCreds + h264Only("v", "640C1F"),
		"bundle=- video=0 h264=100/640c1f rtx=- audio=- ice=sEss/sessionpasswordsessionpass fp=sha-256 setup=", false},
	// A higher level of a profile we send is the same profile (RFC 6184
	// §8.2.2): the viewer's own profile-level-id is answered.
	{"level 3.2 of constrained baseline", sessionHead + sessionCreds + h264Only("v", "42e020"),
		"bundle=- video=0 h264=100/42e020 rtx=- audio=- ice=sEss/sessionpasswordsessionpass fp=sha-256 setup=", false},
	{"sendrecv video", strings.Replace(chromeOffer, "a=recvonly", "a=sendrecv", 1),
		"bundle=0,1 video=0 h264=106/42e01f rtx=107 audio=1 opus=111 ice=EsAw/P2uYro0UCOQ4zxjKXaWCBui1 fp=sha-256 setup=actpass", false},
	// Audio the viewer does not receive, or without Opus, is no error:
	// the viewer gets video.
	{"sendonly audio", strings.Replace(chromeOffer, "a=mid:1\r\na=extmap:14 urn:ietf:params:rtp-hdrext:ssrc-audio-level\r\na=recvonly",
		"a=mid:1\r\na=extmap:14 urn:ietf:params:rtp-hdrext:ssrc-audio-level\r\na=sendonly", 1),
		"bundle=0,1 video=0 h264=106/42e01f rtx=107 audio=- ice=EsAw/P2uYro0UCOQ4zxjKXaWCBui1 fp=sha-256 setup=actpass", false},
	{"audio without opus", strings.Replace(chromeOffer, "a=rtpmap:111 opus/48000/2", "a=rtpmap:111 ISAC/16000", 1),
		"bundle=0,1 video=0 h264=106/42e01f rtx=107 audio=- ice=EsAw/P2uYro0UCOQ4zxjKXaWCBui1 fp=sha-256 setup=actpass", false},
	// Under max-bundle every section after the first has port 0 and
	// a=bundle-only (RFC 8843 §7.2): those of the BUNDLE group are
	// answered (see answerable).
	{"bundle-only audio", strings.Replace(chromeOffer, "m=audio 9", "m=audio 0", 1) + "a=bundle-only\r\n",
		"bundle=0,1 video=0 h264=106/42e01f rtx=107 audio=1 opus=111 ice=EsAw/P2uYro0UCOQ4zxjKXaWCBui1 fp=sha-256 setup=actpass", false},
	{"bundle-only video after audio", sessionHead + "a=group:BUNDLE 0 1\r\n" + strings.Replace(chromeAudio, "a=mid:1", "a=mid:0", 1) +
		strings.Replace(strings.Replace(chromeVideo, "a=mid:0", "a=mid:1", 1), "m=video 9", "m=video 0", 1) + "a=bundle-only\r\n",
		"bundle=0,1 video=1 h264=106/42e01f rtx=107 audio=0 opus=111 ice=EsAw/P2uYro0UCOQ4zxjKXaWCBui1 fp=sha-256 setup=actpass", false},
	// A bundle-only section without transport attributes of its own
	// takes the tagged section's (RFC 8843 §7.1.3).
	{"bundle-only video without transport", sessionHead + "a=group:BUNDLE 0 1\r\n" + strings.Replace(chromeAudio, "a=mid:1", "a=mid:0", 1) +
		strings.NewReplacer("a=mid:0", "a=mid:1", "m=video 9", "m=video 0", "a=ice-ufrag:EsAw\r\n", "", "a=ice-pwd:P2uYro0UCOQ4zxjKXaWCBui1\r\n", "",
			fpLine, "", "a=setup:actpass\r\n", "", "a=rtcp-mux\r\n", "").Replace(chromeVideo) + "a=bundle-only\r\n",
		"bundle=0,1 video=1 h264=106/42e01f rtx=107 audio=0 opus=111 ice=EsAw/P2uYro0UCOQ4zxjKXaWCBui1 fp=sha-256 setup=actpass", false},
	// Port 0 outside the group, or without bundle-only, is a rejection:
	// the next video section is answered.
	{"bundle-only video outside the group", sessionHead + "a=group:BUNDLE v\r\n" + sessionCreds +
		strings.Replace(h264Only("a", "42e01f"), "m=video 9", "m=video 0", 1) + "a=bundle-only\r\n" + h264Only("v", "42e01f"),
		"bundle=v video=1 h264=100/42e01f rtx=- audio=- ice=sEss/sessionpasswordsessionpass fp=sha-256 setup=", false},
	{"port-0 video in the group", sessionHead + "a=group:BUNDLE a v\r\n" + sessionCreds +
		strings.Replace(h264Only("a", "42e01f"), "m=video 9", "m=video 0", 1) + h264Only("v", "42e01f"),
		"bundle=a,v video=1 h264=100/42e01f rtx=- audio=- ice=sEss/sessionpasswordsessionpass fp=sha-256 setup=", false},
	{"port-0 audio without bundle-only", strings.Replace(chromeOffer, "m=audio 9", "m=audio 0", 1),
		"bundle=0,1 video=0 h264=106/42e01f rtx=107 audio=- ice=EsAw/P2uYro0UCOQ4zxjKXaWCBui1 fp=sha-256 setup=actpass", false},

	{"garbage", "hello", `malformed SDP offer: an SDP offer begins with "v=0", this body with "hello"`, true},
	{"JSON", `{"sdp": "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n", "type": "offer"}`,
		`malformed SDP offer: an SDP offer begins with "v=0", this body with "{\"sdp\": \"v=0\\r\\n"`, true},
	{"port not a number", sessionHead + "m=video nine UDP/TLS/RTP/SAVPF 96\r\n", "malformed SDP offer: sdp: invalid port value `nine`", true},
	{"cut off mid-line", chromeOffer[:len(chromeOffer)/2], "malformed SDP offer: EOF", true},
	{"no s= line", "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n" + chromeVideo, `malformed SDP offer: sdp: syntax error at pos 32: "="`, true},
	{"empty", "", "empty SDP offer; POST the viewer's SDP offer (application/sdp) as the body", true},
	{"blank", " \r\n", "empty SDP offer; POST the viewer's SDP offer (application/sdp) as the body", true},
	{"too large", sessionHead + strings.Repeat("a=x\r\n", MaxBytes/5),
		"SDP offer is 1048636 bytes, more than the 1048576 this server reads; browsers send about 10 KB", true},
	{"no video", sessionHead + "a=group:BUNDLE 1\r\n" + chromeAudio,
		"offer has no video m-section; add a recvonly video transceiver", true},
	{"only a bundle-only video, no group", sessionHead + sessionCreds + strings.Replace(h264Only("v", "42e01f"), "m=video 9", "m=video 0", 1) + "a=bundle-only\r\n",
		"offer has no video m-section; add a recvonly video transceiver", true},
	{"only a port-0 video", sessionHead + sessionCreds + strings.Replace(h264Only("v", "42e01f"), "m=video 9", "m=video 0", 1),
		"offer has no video m-section; add a recvonly video transceiver", true},
	{"sendonly video", strings.Replace(chromeOffer, "a=recvonly", "a=sendonly", 1),
		"offer has no recvonly or sendrecv video m-section (got sendonly); a WHEP viewer must receive video", true},
	{"inactive videos", sessionHead + sessionCreds + strings.Replace(h264Only("a", "42e01f"), "a=recvonly", "a=inactive", 1) +
		strings.Replace(h264Only("b", "42e01f"), "a=recvonly", "a=sendonly", 1),
		"offer has no recvonly or sendrecv video m-section (got inactive, sendonly); a WHEP viewer must receive video", true},
	{"VP8 only", sessionHead + sessionCreds + "m=video 9 UDP/TLS/RTP/SAVPF 96 97\r\na=mid:0\r\na=recvonly\r\n" +
		"a=rtpmap:96 VP8/90000\r\na=rtpmap:97 rtx/90000\r\na=fmtp:97 apt=96\r\n",
		"offer has no H.264 (packetization-mode=1) video; offered: VP8, rtx", true},
	{"no rtpmap", sessionHead + sessionCreds + "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:0\r\na=recvonly\r\n",
		"offer has no H.264 (packetization-mode=1) video; offered: nothing", true},
	{"H.264 mode 0 only", strings.ReplaceAll(chromeOffer, "packetization-mode=1", "packetization-mode=0"),
		"offer has no H.264 (packetization-mode=1) video; offered: VP8, rtx, H264", true},
	{"high profile only", sessionHead + sessionCreds + h264Only("v", "f4001f", "64001f"),
		"bundle=- video=0 h264=101/64001f rtx=- audio=- ice=sEss/sessionpasswordsessionpass fp=sha-256 setup=", false},
	{"high 4:4:4 and 10 only", sessionHead + sessionCreds + h264Only("v", "f4001f", "6e001f"),
		"offer has no H.264 profile this server sends (profile-level-id 42e01f, 42001f, 4d001f, 640c1f, 64001f); offered: f4001f, 6e001f", true},
	// An offer of H.265 alone can only be answered for an H.265 path
	// (ForStream): Parse takes it.
	{"H.265 only", sessionHead + sessionCreds + h265Only("v", "level-id=93;profile-id=1;tier-flag=0;tx-mode=SRST"),
		"bundle=- video=0 h265=100/level-id=93;profile-id=1;tier-flag=0;tx-mode=SRST rtx=- audio=- ice=sEss/sessionpasswordsessionpass fp=sha-256 setup=", false},
	{"H.265 MRST only", sessionHead + sessionCreds + h265Only("v", "profile-id=1;tx-mode=MRST"),
		"offer has no H.264 (packetization-mode=1) video; offered: H265", true},
	{"no ICE password", strings.ReplaceAll(chromeOffer, "a=ice-pwd:P2uYro0UCOQ4zxjKXaWCBui1\r\n", ""),
		"offer has no ice-ufrag/ice-pwd; a WebRTC offer must carry ICE credentials", true},
	{"no fingerprint", strings.ReplaceAll(chromeOffer, fpLine, ""),
		"offer has no DTLS fingerprint; a WebRTC offer must carry a=fingerprint", true},
}
