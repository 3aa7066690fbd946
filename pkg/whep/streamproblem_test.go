package whep

import (
	"net/http"
	"testing"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// TestPostStreamProblem: a path whose publisher was refused, or whose
// live publisher sends no decodable picture, answers 409 + Retry-After
// with the reason and fix instead of "no publisher" or a 201 and a black
// screen; a refusal of an earlier publisher does not hide a live one.
func TestPostStreamProblem(t *testing.T) {
	src := newTestSource()
	src.publish("live/cam1")
	src.publish("live/black")
	problems := map[string]StreamProblem{
		"live/none":  {Detail: "the publisher was refused: B-frames; ffmpeg -bf 0"},
		"live/cam1":  {Detail: "an earlier publisher was refused"},
		"live/black": {Live: true, Detail: "no IDR; GStreamer mpegtsmux alignment=7"},
		// Streaming, but not yet the path's publisher: it has shown no
		// picture to claim the path with.
		"live/pending": {Live: true, Detail: "no IDR; GStreamer mpegtsmux alignment=7"},
	}
	_, hs := startServer(t, src, func(c *Config) {
		c.Problem = func(path string) (StreamProblem, bool) { p, ok := problems[path]; return p, ok }
	})
	offer := testkit.Offer(t, testkit.OfferOptions{}).SDP
	for _, c := range []struct {
		path, slug, want string
	}{
		{"live/none", probRefused, `path "live/none": the publisher was refused: B-frames; ffmpeg -bf 0`},
		{"live/black", probNoPicture, `path "live/black": no IDR; GStreamer mpegtsmux alignment=7`},
		{"live/pending", probNoPicture, `path "live/pending": no IDR; GStreamer mpegtsmux alignment=7`},
	} {
		resp, body := post(t, hs.URL+"/"+c.path+"/whep", "application/sdp", offer)
		checkProblem(t, resp, body, http.StatusConflict, c.slug, c.want)
		if got := resp.Header.Get("Retry-After"); got != retryAfterProblem {
			t.Errorf("%s: Retry-After %q, want %s", c.path, got, retryAfterProblem)
		}
	}
	if n := src.paths["live/black"].readerCount(); n != 0 {
		t.Errorf("the refused viewer left %d readers reserved", n)
	}
	resp, body := post(t, hs.URL+"/live/cam1/whep", "application/sdp", offer)
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("live publisher with an earlier refusal: %d %s, want 201", resp.StatusCode, body)
	}
}
