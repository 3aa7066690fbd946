package whep

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pion/sdp/v3"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
	"github.com/srtwhep/srtwhep/pkg/hub"
)

// The offers of testdata/offers are real clients' (or shaped after them,
// as each file's header says) and the answer the media plane gives each
// one. An answer is summarised as its BUNDLE group, then per m-section
// kind, port, mid, direction and, for an accepted RTP section, its
// payload types with the first one's codec (and H.264 profile).
var offerFixtures = []struct {
	file string
	want string
}{
	{"chromium-default.sdp",
		"BUNDLE 0 1 | video 9 0 sendonly 108:H264/42e01f | audio 9 1 sendonly 111:opus"},
	{"chromium-maxbundle-audio-first.sdp",
		"BUNDLE 0 1 | audio 9 0 sendonly 111:opus | video 9 1 sendonly 108:H264/42e01f"},
	{"chromium-maxbundle-video-first.sdp",
		"BUNDLE 0 1 | video 9 0 sendonly 108:H264/42e01f | audio 9 1 sendonly 111:opus"},
	{"chromium-maxbundle-audio-first-bundleonly.sdp",
		"BUNDLE 0 1 | audio 9 0 sendonly 111:opus | video 9 1 sendonly 108:H264/42e01f"},
	{"chromium-maxbundle-video-first-bundleonly.sdp",
		"BUNDLE 0 1 | video 9 0 sendonly 108:H264/42e01f | audio 9 1 sendonly 111:opus"},
	{"firefox-maxbundle.sdp",
		"BUNDLE 0 1 | audio 9 0 sendonly 109:opus | video 9 1 sendonly 126:H264/42e01f"},
	// The README's transceivers are sendrecv; the answer is sendonly, as
	// the server only sends.
	{"whipwhep-audio-first.sdp",
		"BUNDLE 0 1 | audio 9 0 sendonly 111:opus | video 9 1 sendonly 108:H264/42e01f"},
	// The data channel is rejected.
	{"mediamtx-datachannel.sdp",
		"BUNDLE 0 1 | video 9 0 sendonly 108:H264/42e01f | audio 9 1 sendonly 111:opus | application 0 2 -"},
	// A stream of unknown profile (these tests' paths) gets 42e01f; on
	// a High-profile path TestOfferStreamFixtures expects 640c1f.
	{"safari.sdp",
		"BUNDLE 0 1 | video 9 0 sendonly 98:H264/42e01f | audio 9 1 sendonly 111:opus"},
}

// videoOnlyFixtures are offers posted to a path without audio: the audio
// section is rejected with its mid kept (RFC 8843 §7.3.3: a rejected
// section of the group keeps its mid, so the offerer knows which one it
// was).
var videoOnlyFixtures = []struct{ file, want string }{
	{"chromium-default.sdp", "BUNDLE 0 | video 9 0 sendonly 108:H264/42e01f | audio 0 1 -"},
	{"chromium-maxbundle-audio-first-bundleonly.sdp", "BUNDLE 1 | audio 0 0 - | video 9 1 sendonly 108:H264/42e01f"},
	{"firefox-maxbundle.sdp", "BUNDLE 1 | audio 0 0 - | video 9 1 sendonly 126:H264/42e01f"},
}

// publishAV publishes live/av on h with audio; it ends with the test.
func publishAV(t *testing.T, h *hub.Hub) *hub.Publisher {
	t.Helper()
	pub, err := h.Publish("live/av", "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	pub.SetAudio(true)
	return pub
}

// readOfferFixture is a fixture's offer without its header comment lines.
func readOfferFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "offers", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for strings.HasPrefix(s, "#") {
		_, s, _ = strings.Cut(s, "\n")
	}
	return s
}

// answerSummary renders an answer as offerFixtures spells it, and fails
// on what RFC 8843 §7.3 forbids whatever the fixture: a=bundle-only in an
// answer, an accepted RTP section without rtcp-mux, a rejected section in
// the group or one that sends.
func answerSummary(t *testing.T, answer string) string {
	t.Helper()
	var sd sdp.SessionDescription
	if err := sd.UnmarshalString(answer); err != nil {
		t.Fatalf("answer does not parse: %v\n%s", err, answer)
	}
	group, _ := sd.Attribute("group")
	bundle := strings.Fields(group)
	parts := []string{group}
	for _, md := range sd.MediaDescriptions {
		mid, _ := md.Attribute("mid")
		port := md.MediaName.Port.Value
		dir := "-"
		for _, d := range []string{"sendonly", "recvonly", "sendrecv", "inactive"} {
			if _, ok := md.Attribute(d); ok {
				dir = d
			}
		}
		if _, ok := md.Attribute("bundle-only"); ok {
			t.Errorf("answer's %s section %s has a=bundle-only, which only an offer may carry", md.MediaName.Media, mid)
		}
		inGroup := slices.Contains(bundle[min(1, len(bundle)):], mid)
		rtp := slices.Contains(md.MediaName.Protos, "RTP")
		if port == 0 && (inGroup || rtp && (dir == "sendonly" || dir == "sendrecv")) {
			t.Errorf("rejected %s section %s is in the group (%q) or sends (%s)", md.MediaName.Media, mid, group, dir)
		}
		if port != 0 && !inGroup {
			t.Errorf("accepted %s section %s is not in the group %q", md.MediaName.Media, mid, group)
		}
		p := fmt.Sprintf("%s %d %s %s", md.MediaName.Media, port, mid, dir)
		if port != 0 && rtp {
			if _, ok := md.Attribute("rtcp-mux"); !ok {
				t.Errorf("accepted %s section %s lacks a=rtcp-mux", md.MediaName.Media, mid)
			}
			first := md.MediaName.Formats[0]
			codec := ""
			for _, a := range md.Attributes {
				if v, ok := strings.CutPrefix(a.Value, first+" "); ok && a.Key == "rtpmap" {
					codec, _, _ = strings.Cut(v, "/")
				}
				if v, ok := strings.CutPrefix(a.Value, first+" "); ok && a.Key == "fmtp" {
					if _, plid, ok := strings.Cut(v, "profile-level-id="); ok {
						codec += "/" + plid[:min(6, len(plid))]
					}
				}
			}
			p += " " + strings.Join(md.MediaName.Formats, ",") + ":" + codec
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " | ")
}

// TestOfferFixtures posts each fixture to a server (a path with audio) and checks the answer: every section answered, the
// bundle-only ones accepted into the group with a real port, H.264 in
// the profile the server prefers, Opus. An empty and a non-SDP body are
// refused with a reason.
func TestOfferFixtures(t *testing.T) {
	h := hub.New(hub.Config{})
	publishAV(t, h)
	_, hs := startServer(t, hubSource(h), nil)
	url := hs.URL + "/live/av/whep"
	for _, f := range offerFixtures {
		t.Run(f.file, func(t *testing.T) {
			resp, body := post(t, url, "application/sdp", readOfferFixture(t, f.file))
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("got %d %q, want 201", resp.StatusCode, body)
			}
			got := answerSummary(t, body)
			t.Logf("answer: %s", got)
			if got != f.want {
				t.Errorf("answer\n got %s\nwant %s", got, f.want)
			}
		})
	}
	vpub, err := h.Publish("live/v", "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vpub.Close)
	for _, f := range videoOnlyFixtures {
		t.Run("video only/"+f.file, func(t *testing.T) {
			resp, body := post(t, hs.URL+"/live/v/whep", "application/sdp", readOfferFixture(t, f.file))
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("got %d %q, want 201", resp.StatusCode, body)
			}
			if got := answerSummary(t, body); got != f.want {
				t.Errorf("answer\n got %s\nwant %s", got, f.want)
			}
		})
	}
	for _, c := range []struct{ name, body, reason string }{
		{"empty", "", "the request body is empty"},
		{"not SDP", "<html>offer</html>", "the request body is not SDP"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := post(t, url, "application/sdp", c.body)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, c.reason) {
				t.Errorf("got %d %q, want 400 saying %q", resp.StatusCode, body, c.reason)
			}
		})
	}
}

// TestBundleOnlyViewer: a real pion viewer offering max-bundle with
// bundle-only sections (RFC 8843 §7.2), video first and audio first
// (whip-whep's order), gets both sections answered in one BUNDLE group
// and plays every published video frame and Opus packet.
func TestBundleOnlyViewer(t *testing.T) {
	for _, audioFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("audio first %v", audioFirst), func(t *testing.T) {
			clip := makeClip(t, 60, 30)
			c := newAVClip(t, clip)
			h := hub.New(hub.Config{})
			pub := publishAV(t, h)
			url := startHubServer(t, h, nil)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			var answer string
			viewer := dialAV(t, ctx, url+"/live/av/whep", true, func(o *whepclient.Options) {
				o.BundleOnly, o.AudioFirst = true, audioFirst
				o.RewriteAnswer = func(s string) string { answer = s; return s }
			})
			want := "BUNDLE 0 1 | video 9 0 sendonly 102:H264/42e01f | audio 9 1 sendonly 111:opus"
			if audioFirst {
				want = "BUNDLE 0 1 | audio 9 0 sendonly 111:opus | video 9 1 sendonly 102:H264/42e01f"
			}
			if got := answerSummary(t, answer); got != want {
				t.Errorf("answer\n got %s\nwant %s", got, want)
			}
			waitAttached(t, h, 1)
			for _, f := range c.frames {
				f.writeTo(pub)
			}
			lastVideo := int64((len(clip) - 1) * videoStep)
			lastAudio := c.frames[len(c.frames)-1].a.PTS
			testkit.WaitFor(t, 20*time.Second, "the last video frame and the last Opus packet", func() bool {
				video, audio := viewer.received(t, c)
				return len(video) > 0 && video[len(video)-1] == lastVideo && len(audio) > 0 && audio[len(audio)-1] == lastAudio
			})
			video, audio := viewer.received(t, c)
			if len(video) != len(clip) || len(audio) != len(c.frames)-len(clip) {
				t.Errorf("received %d video frames and %d Opus packets, want %d and %d",
					len(video), len(audio), len(clip), len(c.frames)-len(clip))
			}
		})
	}
}

// TestBundleOnlyVideoOnlyPath: whip-whep's audio-first max-bundle offer
// on a path without audio. The offerer-tagged audio section is rejected
// and the bundle-only video one becomes the group's only section (RFC
// 8843 §7.3.1: the answerer tags the first section it accepts); the
// viewer plays every frame.
func TestBundleOnlyVideoOnlyPath(t *testing.T) {
	clip := makeClip(t, 60, 30)
	h := hub.New(hub.Config{})
	pub, err := h.Publish("live/v", "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	url := startHubServer(t, h, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var answer string
	viewer := dialAV(t, ctx, url+"/live/v/whep", true, func(o *whepclient.Options) {
		o.BundleOnly, o.AudioFirst = true, true
		o.RewriteAnswer = func(s string) string { answer = s; return s }
	})
	// pion's stack leaves the rejected section's mid out, so only the
	// group and the video section are compared.
	got := answerSummary(t, answer)
	if !strings.HasPrefix(got, "BUNDLE 1 | audio 0 ") || !strings.HasSuffix(got, " | video 9 1 sendonly 102:H264/42e01f") {
		t.Errorf("answer %s, want the audio section rejected and video alone in the group", got)
	}
	waitAttached(t, h, 1)
	for _, au := range clip {
		pub.Write(au)
	}
	c := newAVClip(t, clip) // maps what arrives back to the clip
	testkit.WaitFor(t, 20*time.Second, "every video frame", func() bool {
		video, _ := viewer.received(t, c)
		return len(video) == len(clip)
	})
}
