package sdpoffer

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/av"
)

// safariVideo is shaped after Safari 17's video section (testdata of
// pkg/whep): H.264 High (Constrained) and Constrained Baseline, then
// H.265 Main and Main 10, each with level-asymmetry-allowed on H.264.
func safariVideo() string {
	return "m=video 9 UDP/TLS/RTP/SAVPF 96 98 100 104\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\na=recvonly\r\na=rtcp-mux\r\n" +
		"a=rtpmap:96 H264/90000\r\na=fmtp:96 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=640c1f\r\n" +
		"a=rtpmap:98 H264/90000\r\na=fmtp:98 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n" +
		"a=rtpmap:100 H265/90000\r\na=fmtp:100 level-id=93;profile-id=1;tier-flag=0;tx-mode=SRST\r\n" +
		"a=rtpmap:104 H265/90000\r\na=fmtp:104 level-id=93;profile-id=2;tier-flag=0;tx-mode=SRST\r\n"
}

func h264Stream(plid string) av.StreamInfo {
	return av.StreamInfo{Codec: "H264", Profile: "test", ProfileLevelID: plid}
}

func h265Stream(profileID int) av.StreamInfo {
	return av.StreamInfo{Codec: "H265", Profile: "Main", H265: av.H265Params{ProfileID: profileID, LevelID: 93}}
}

// TestForStream: the codec answered follows what the path publishes, and
// an offer that cannot take it is a *CodecError naming the fix.
func TestForStream(t *testing.T) {
	safari := sessionHead + sessionCreds + safariVideo()
	cases := []struct {
		name  string
		offer string
		info  av.StreamInfo
		want  string // the video codec answered: "h264=PT/plid" or "h265=PT"; or the error's start
		err   bool
	}{
		{"unknown stream keeps Parse's choice", safari, av.StreamInfo{}, "h264=98/42e01f", false},
		// The Safari case: a High stream gets the High payload
		// type, which level-asymmetry-allowed lets carry any level.
		{"High stream, Safari", safari, h264Stream("640028"), "h264=96/640c1f", false},
		{"Main stream, Safari", safari, h264Stream("4d0029"), "h264=96/640c1f", false},
		{"x264 baseline stream, Safari", safari, h264Stream("42c01e"), "h264=98/42e01f", false},
		{"High stream, exact profile offered", sessionHead + sessionCreds + h264Only("v", "42e01f", "640c1f", "64001f"),
			h264Stream("640028"), "h264=102/64001f", false},
		{"Main stream, exact profile offered", sessionHead + sessionCreds + h264Only("v", "42e01f", "4d001f", "640c1f"),
			h264Stream("4d0028"), "h264=101/4d001f", false},
		// Nothing decodes it better than today's choice: keep it.
		{"High stream, baseline offered", sessionHead + sessionCreds + h264Only("v", "42e01f"), h264Stream("640028"), "h264=100/42e01f", false},
		{"High stream, no level asymmetry", sessionHead + sessionCreds +
			strings.ReplaceAll(h264Only("v", "42e01f", "640c1f"), "level-asymmetry-allowed=1;", ""),
			h264Stream("640028"), "h264=100/42e01f", false},
		{"4:4:4 stream", safari, h264Stream("f4001f"), "h264=98/42e01f", false},
		{"H.265 Main", safari, h265Stream(1), "h265=100", false},
		{"H.265 Main 10", safari, h265Stream(2), "h265=104", false},
		{"H.265 profile not offered", safari, h265Stream(3), "h265=100", false},
		{"H.265 stream, H.264-only offer", chromeOffer, h265Stream(1),
			"This stream is H.265 (HEVC, Main), which this browser cannot play over WebRTC: its offer has no H265/90000 video (it offered VP8, H264). Use Safari 17+", true},
		{"H.264 stream, H.265-only offer", sessionHead + sessionCreds + h265Only("v", "profile-id=1"), h264Stream("640028"),
			"the path publishes H264, and this viewer's offer has no H.264", true},
		{"unknown stream, H.265-only offer", sessionHead + sessionCreds + h265Only("v", "profile-id=1"), av.StreamInfo{},
			"the path has no stream yet, and this viewer's offer has only H.265 video", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(tc.offer)
			if err != nil {
				t.Fatal(err)
			}
			before := summary(o)
			got, err := o.ForStream(tc.info)
			if tc.err {
				var ce *CodecError
				if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), tc.want) {
					t.Fatalf("err = %v, want *CodecError starting %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := sentSummary(got); s != tc.want {
				t.Errorf("answered %s, want %s", s, tc.want)
			}
			if summary(o) != before {
				t.Errorf("ForStream changed the offer it was called on:\n%s\n%s", before, summary(o))
			}
		})
	}
}

func sentSummary(o *Offer) string {
	c := o.Sent()
	if o.VideoCodec == av.CodecH265 {
		return fmt.Sprintf("h265=%d", c.PT)
	}
	return fmt.Sprintf("h264=%d/%s", c.PT, c.ProfileLevelID())
}
