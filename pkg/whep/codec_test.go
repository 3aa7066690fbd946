package whep

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/httpproblem"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

// TestOfferStreamFixtures: the fixtures of testdata/offers on paths whose
// stream is known. The answered payload type follows the
// published stream: Safari's 640c1f for a High-profile stream, Chromium's
// 4d001f for a Main one, H.265 for an H.265 path when offered. A viewer
// that did not offer H.265 for an H.265 path gets a 409 problem detail
// that names the fix.
func TestOfferStreamFixtures(t *testing.T) {
	streams := map[string]av.StreamInfo{
		"live/high": {Codec: "H264", Profile: "High", Width: 1280, Height: 720, ProfileLevelID: "64001f"},
		"live/main": {Codec: "H264", Profile: "Main", Width: 1280, Height: 720, ProfileLevelID: "4d0028"},
		"live/hevc": {Codec: "H265", Profile: "Main", Width: 1280, Height: 720, H265: av.H265Params{ProfileID: 1, LevelID: 93}},
	}
	cases := []struct {
		file, path, want string
	}{
		{"safari.sdp", "live/high", "BUNDLE 0 1 | video 9 0 sendonly 96:H264/640c1f | audio 9 1 sendonly 111:opus"},
		{"safari.sdp", "live/main", "BUNDLE 0 1 | video 9 0 sendonly 96:H264/640c1f | audio 9 1 sendonly 111:opus"},
		{"safari.sdp", "live/hevc", "BUNDLE 0 1 | video 9 0 sendonly 100:H265 | audio 9 1 sendonly 111:opus"},
		// Chromium offers no High payload type in mode 1: a Main one
		// cannot decode High, so the safe choice stays.
		{"chromium-default.sdp", "live/high", "BUNDLE 0 1 | video 9 0 sendonly 108:H264/42e01f | audio 9 1 sendonly 111:opus"},
		{"chromium-default.sdp", "live/main", "BUNDLE 0 1 | video 9 0 sendonly 116:H264/4d001f | audio 9 1 sendonly 111:opus"},
	}
	h := hub.New(hub.Config{})
	for name, info := range streams {
		pub, err := h.Publish(name, "test")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pub.Close)
		pub.SetAudio(true)
		pub.SetInfo(info)
	}
	_, hs := startServer(t, hubSource(h), nil)
	for _, c := range cases {
		t.Run(c.file+" on "+c.path, func(t *testing.T) {
			resp, body := post(t, hs.URL+"/"+c.path+"/whep", "application/sdp", readOfferFixture(t, c.file))
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("got %d %q, want 201", resp.StatusCode, body)
			}
			got := answerSummary(t, body)
			t.Logf("answer: %s", got)
			if got != c.want {
				t.Errorf("answer\n got %s\nwant %s", got, c.want)
			}
			if strings.Contains(c.want, "H265") && !strings.Contains(body, "profile-id=1;tier-flag=0;tx-mode=SRST") {
				t.Errorf("H.265 answer lacks the offer's profile-id, tier-flag and tx-mode=SRST:\n%s", body)
			}
		})
	}
	for _, file := range []string{"chromium-default.sdp", "firefox-maxbundle.sdp"} {
		t.Run(file+" on live/hevc", func(t *testing.T) {
			resp, body := post(t, hs.URL+"/live/hevc/whep", "application/sdp", readOfferFixture(t, file))
			var p struct {
				Type, Detail string
				Status       int
			}
			if err := json.Unmarshal([]byte(body), &p); err != nil {
				t.Fatalf("got %d %q: %v", resp.StatusCode, body, err)
			}
			t.Logf("%d %s: %s", resp.StatusCode, p.Type, p.Detail)
			if resp.StatusCode != http.StatusConflict || p.Status != http.StatusConflict ||
				p.Type != httpproblem.TypeBase+probVideoCodec ||
				!strings.Contains(p.Detail, "This stream is H.265 (HEVC, Main)") || !strings.Contains(p.Detail, "it offered ") ||
				!strings.Contains(p.Detail, "-c:v libx264 -bf 0") || !strings.Contains(p.Detail, "set video: auto") {
				t.Errorf("got %d %+v, want 409 %s naming H.265, what the offer had, the encoder fix and the operator's", resp.StatusCode, p, probVideoCodec)
			}
		})
	}
}

// TestWithoutRendition: the operator's fix (video: auto) is added only
// where it is true: an H.265 path's refusal when the path makes no H.264
// rendition. Another reason the rendition is missing, or a refusal of
// some other kind, is passed on as it is.
func TestWithoutRendition(t *testing.T) {
	model, err := sdpoffer.Parse(readOfferFixture(t, "chromium-default.sdp"))
	if err != nil {
		t.Fatal(err)
	}
	_, h265Err := model.ForStream(av.StreamInfo{Codec: "H265", Profile: "Main", H265: av.H265Params{ProfileID: 1}})
	if h265Err == nil {
		t.Fatal("Chromium's offer took an H.265 stream")
	}
	other := errors.New("the path has no stream yet")
	cases := []struct {
		name           string
		codecErr, rend error
		operatorFix    bool
	}{
		{"H.265, no rendition", h265Err, hub.ErrNoPublisher, true},
		{"H.265, rendition full", h265Err, hub.ErrPathFull, false},
		{"not H.265", other, hub.ErrNoPublisher, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := withoutRendition(c.codecErr, c.rend)
			t.Logf("%v", got)
			if has := strings.Contains(got.Error(), "set video: auto"); has != c.operatorFix {
				t.Errorf("names video: auto %v, want %v: %v", has, c.operatorFix, got)
			}
			if !strings.HasPrefix(got.Error(), c.codecErr.Error()) {
				t.Errorf("lost the reason %q: %v", c.codecErr, got)
			}
		})
	}
}

// TestRenditionAtReaderCap: the path's reader cap counts both
// renditions, so the H.264 viewer of an H.265 path must not be refused
// for the original's reader it holds only while it asks for the
// rendition's: with one slot left it gets 201 (pending: no seat until its
// ICE starts), and once the path is full
// the next one gets 503 path-full (it could play the stream), not a 409.
func TestRenditionAtReaderCap(t *testing.T) {
	h := hub.New(hub.Config{MaxReaders: func(string) int { return 1 }})
	pub, err := h.Publish("live/hevc", "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	pub.SetAudio(true)
	pub.SetInfo(av.StreamInfo{Codec: "H265", Profile: "Main", Width: 1280, Height: 720, H265: av.H265Params{ProfileID: 1, LevelID: 93}})
	rend, err := pub.AddRendition()
	if err != nil {
		t.Fatal(err)
	}
	rend.SetInfo(av.StreamInfo{Codec: "H264", Profile: "Constrained Baseline", Width: 1280, Height: 720})
	_, hs := startServer(t, hubSource(h), nil)
	offer := readOfferFixture(t, "chromium-default.sdp")

	resp, body := post(t, hs.URL+"/live/hevc/whep", "application/sdp", offer)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("H.264 viewer with the path's one slot free: got %d %q, want 201", resp.StatusCode, body)
	}
	if got := answerSummary(t, body); !strings.Contains(got, "H264") {
		t.Errorf("answer %s, want H.264 (the rendition)", got)
	}
	// That viewer never starts ICE, so it holds no seat (pending offers
	// do not count): a reader that counts at once, as an SRT reader
	// does, fills the path.
	srtReader, err := h.AddReader("live/hevc", "srt-reader")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srtReader.Close)
	resp, body = post(t, hs.URL+"/live/hevc/whep", "application/sdp", offer)
	var p struct{ Type string }
	_ = json.Unmarshal([]byte(body), &p)
	if resp.StatusCode != http.StatusServiceUnavailable || p.Type != httpproblem.TypeBase+probPathFull {
		t.Errorf("H.264 viewer of a full path: got %d %q, want 503 %s", resp.StatusCode, body, probPathFull)
	}
	if n := h.State("live/hevc").Readers; n != 1 {
		t.Errorf("%d readers counted on the path's renditions, want the SRT reader alone (the pending viewer holds no seat)", n)
	}
}
