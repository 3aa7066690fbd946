package wheplayer

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
	"github.com/srtwhep/srtwhep/internal/whepclient"
)

// TestLayerContract walks the extension's HTTP contract against a real
// viewer's session on a path with one layer (the source): the Link of
// the 201, GET, the selections that are accepted and every refusal, each
// with its status, slug and what its detail must name, and CORS on all.
func TestLayerContract(t *testing.T) {
	f := newFixture(t)
	v := f.dial(t)
	target := whepclient.LayerLink(v.SessionURL(), v.Links())
	if want := v.SessionURL() + "/layer"; target != want {
		t.Fatalf("layer Link target %q, want %q (links %q)", target, want, v.Links())
	}
	// The text asks for the events Link with layers among its events.
	if _, events := whepclient.SSELink(v.SessionURL(), v.Links()); !slices.Contains(events, "layers") {
		t.Errorf("events Link without layers: %q", v.Links())
	}
	media, ok := f.ly.media("live/cam1", sessionID(v))
	if !ok {
		t.Fatal("LayerMedia: no session")
	}

	resp, body := testkit.Do(t, http.MethodGet, target, "", "", nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	ls := layers(t, body)
	if ls.MediaID != media || !slices.Equal(ls.IDs(), []string{SourceLayer}) || ls.Active() != SourceLayer ||
		ls.List[0].EncodingID != SourceLayer || ls.List[0].Width != 320 || ls.List[0].Height != 240 {
		t.Errorf("GET: %s, want the video's mediaId %q and one active layer %q", body, media, SourceLayer)
	}
	checkCORS(t, "GET", resp)

	const js = "application/json"
	ok200 := []struct{ name, ct, body string }{
		{"pin the source by encodingId", js, `{"mediaId":"` + media + `","encodingId":"source"}`},
		{"pin the source by rid, as the current text names it", js, `{"rid":"source"}`},
		{"rid and encodingId that agree", js, `{"rid":"source","encodingId":"source"}`},
		{"auto", js, `{"encodingId":"auto"}`},
		{"no constraints: the server's choice", js, `{"mediaId":"` + media + `"}`},
		{"{}", js, `{}`},
		{"an empty body", "", ``},
		{"maxHeight the source's", js, `{"maxHeight":240}`},
		{"maxWidth and maxHeight above the source's", js, `{"maxWidth":7680,"maxHeight":4320}`},
	}
	for _, c := range ok200 {
		resp, body := testkit.Do(t, http.MethodPost, target, c.ct, c.body, nil)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d %s, want 200", c.name, resp.StatusCode, body)
			continue
		}
		if ls := layers(t, body); ls.Active() != SourceLayer {
			t.Errorf("%s: answered %s", c.name, body)
		}
		checkCORS(t, c.name, resp)
	}

	refusals := []struct {
		name, method, url, ct, body string
		status                      int
		slug                        string
		names                       []string // in the detail
	}{
		{"a layer the ladder lacks", "POST", target, js, `{"encodingId":"360p"}`, 400, probUnknownLayer, []string{`"360p"`, "source"}},
		{"maxHeight below every layer", "POST", target, js, `{"maxHeight":10}`, 400, probUnknownLayer, []string{"maxHeight 10", "source (320x240)"}},
		{"spatialLayerId", "POST", target, js, `{"spatialLayerId":1}`, 400, probUnsupported, []string{"spatialLayerId", "encodingId", "source"}},
		{"temporalLayerId", "POST", target, js, `{"mediaId":"0","temporalLayerId":0}`, 400, probUnsupported, []string{"temporalLayerId"}},
		{"maxTemporalLayerId", "POST", target, js, `{"maxTemporalLayerId":0}`, 400, probUnsupported, []string{"maxTemporalLayerId"}},
		{"an unknown field", "POST", target, js, `{"encodingID":"source"}`, 400, probUnsupported, []string{`"encodingID"`, "encodingId"}},
		{"malformed JSON", "POST", target, js, `{"encodingId":`, 400, probBadRequest, []string{"JSON object"}},
		{"an array", "POST", target, js, `["source"]`, 400, probBadRequest, []string{"JSON object"}},
		{"null", "POST", target, js, `null`, 400, probBadRequest, []string{"JSON object"}},
		{"a number for encodingId", "POST", target, js, `{"encodingId":360}`, 400, probBadRequest, []string{"encodingId must be a string"}},
		{"a negative maxHeight", "POST", target, js, `{"maxHeight":-1}`, 400, probBadRequest, []string{"maxHeight"}},
		{"rid and encodingId that disagree", "POST", target, js, `{"rid":"source","encodingId":"360p"}`, 400, probBadRequest, []string{"rid", "encodingId"}},
		{"an encoding and bounds", "POST", target, js, `{"encodingId":"source","maxHeight":360}`, 400, probBadRequest, []string{"either"}},
		{"another m-line", "POST", target, js, `{"mediaId":"7","encodingId":"source"}`, 400, probWrongMedia, []string{`"7"`, `"` + media + `"`}},
		{"a number for mediaId", "POST", target, js, `{"mediaId":0}`, 400, probBadRequest, []string{"mediaId must be a string"}},
		{"text/plain", "POST", target, "text/plain", `{"encodingId":"source"}`, 415, probContentType, []string{"application/json"}},
		{"no Content-Type with a body", "POST", target, "", `{"encodingId":"source"}`, 415, probContentType, []string{"application/json"}},
		{"a body over the bound", "POST", target, js, `{"mediaId":"` + strings.Repeat("0", maxBody) + `"}`, 413, probTooLarge, []string{"4096"}},
		{"POST to an unknown session", "POST", f.url + "/live/cam1/whep/0123456789abcdef/layer", js, `{}`, 404, probNoSession, []string{"session"}},
		{"GET of an unknown session", "GET", f.url + "/live/cam1/whep/0123456789abcdef/layer", "", "", 404, probNoSession, []string{"session"}},
		{"the session on another path", "GET", strings.Replace(target, "/live/cam1/", "/live/cam2/", 1), "", "", 404, probNoSession, []string{"session"}},
		{"PUT", "PUT", target, js, `{}`, 405, probMethod, []string{"POST"}},
	}
	for _, c := range refusals {
		resp, body := testkit.Do(t, c.method, c.url, c.ct, c.body, nil)
		if resp.StatusCode != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, body, c.status)
			continue
		}
		slug, detail := problem(t, body)
		if slug != c.slug {
			t.Errorf("%s: slug %q, want %q (%s)", c.name, slug, c.slug, detail)
		}
		for _, n := range c.names {
			if !strings.Contains(detail, n) {
				t.Errorf("%s: detail %q does not name %s", c.name, detail, n)
			}
		}
		checkCORS(t, c.name, resp)
		if c.status == 405 && resp.Header.Get("Allow") != "OPTIONS, GET, POST" {
			t.Errorf("%s: Allow %q", c.name, resp.Header.Get("Allow"))
		}
	}
	// Every refusal reaches the refusal log, once.
	if got := len(f.refusals()); got != len(refusals) {
		t.Errorf("%d refusals logged, want %d: %q", got, len(refusals), f.refusals())
	}

	// A preflight, as a page on another origin sends before its POST.
	req, _ := http.NewRequest(http.MethodOptions, target, nil)
	req.Header.Set("Origin", "https://player.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Content-Type") || resp.Header.Get("Access-Control-Max-Age") == "" {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	checkCORS(t, "preflight", resp)

	// The URL ends with its session.
	_ = v.Close()
	testkit.WaitFor(t, 10*time.Second, "the layer URL to end with its session", func() bool {
		resp, _ := testkit.Do(t, http.MethodGet, target, "", "", nil)
		return resp.StatusCode == http.StatusNotFound
	})
}

func checkCORS(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Link") {
		t.Errorf("%s: CORS headers %q %q", what, resp.Header.Get("Access-Control-Allow-Origin"), resp.Header.Get("Access-Control-Expose-Headers"))
	}
}

// TestLayersEvent: an event stream that asks for layers gets the ladder
// with the active layer as it opens; one that does not ask gets none; a
// pin leaves the event stream and the GET agreeing.
func TestLayersEvent(t *testing.T) {
	f := newFixture(t)
	v := f.dial(t)
	sse, events := whepclient.SSELink(v.SessionURL(), v.Links())
	if !slices.Contains(events, "layers") {
		t.Fatalf("events Link %q without layers", events)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	es, err := whepclient.OpenEvents(ctx, nil, sse, []string{"layers"})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	ev, err := es.Next(10*time.Second, func(ev whepclient.Event) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	media, _ := f.ly.media("live/cam1", sessionID(v))
	ls := layers(t, string(ev.Data))
	if ev.Type != "layers" || ls.MediaID != media || ls.Active() != SourceLayer || ls.Pinned() != "" {
		t.Errorf("first event %s %s, want layers for mediaId %q with %q active and no pin", ev.Type, ev.Data, media, SourceLayer)
	}
	// Without layers in its list a stream gets none.
	other, err := whepclient.OpenEvents(ctx, nil, sse, []string{"active", "viewercount"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if ev, err := other.Next(2*time.Second, func(ev whepclient.Event) bool { return ev.Type == "layers" }); err == nil {
		t.Errorf("a stream that did not ask got %s %s", ev.Type, ev.Data)
	}
	target := whepclient.LayerLink(v.SessionURL(), v.Links())
	resp, body := testkit.Do(t, http.MethodPost, target, "application/json", `{"encodingId":"source"}`, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("pin: %d %s", resp.StatusCode, body)
	}
	// The event stream says what GET says, now or after a change.
	_, got := testkit.Do(t, http.MethodGet, target, "", "", nil)
	if got != body {
		t.Errorf("GET after the pin %s, the POST answered %s", got, body)
	}
}

func sessionID(v *whepclient.Session) string {
	u := v.SessionURL()
	return u[strings.LastIndex(u, "/")+1:]
}
