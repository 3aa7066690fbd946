package sdpoffer

import (
	"slices"
	"testing"
)

func TestCodecNames(t *testing.T) {
	raw := "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96 98 100\r\na=rtpmap:96 VP8/90000\r\na=rtpmap:98 vp8/90000\r\na=rtpmap:100 H264/90000\r\n" +
		"m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\na=rtpmap:1 X/1\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n"
	if got, want := CodecNames(raw, 16), []string{"video/VP8", "video/H264", "audio/opus"}; !slices.Equal(got, want) {
		t.Errorf("CodecNames = %q, want %q", got, want)
	}
	if got := CodecNames(raw, 1); len(got) != 1 {
		t.Errorf("limit 1: %q", got)
	}
	if !OffersH264(raw) || OffersH264("m=audio 9 X 100\r\na=rtpmap:100 H264/90000\r\n") {
		t.Error("OffersH264 is wrong")
	}
}
