package wheplayer

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// FuzzSelection: a layer selection's body is refused with a status, a
// slug and a detail, or names a layer of the ladder, or none (the
// server's choice); nothing else.
func FuzzSelection(f *testing.F) {
	for _, seed := range []string{"", "{}", `{"mediaId":"0"}`, `{"encodingId":"360p"}`, `{"rid":"source"}`, `{"encodingId":"auto"}`,
		`{"maxHeight":360}`, `{"maxWidth":1280,"maxHeight":720}`, `{"spatialLayerId":1}`, `{"maxHeight":-1}`, `{"rid":"a","encodingId":"b"}`,
		`[1]`, "null", `{"encodingId":`, strings.Repeat(`{"a":`, 1000)} {
		f.Add(seed, "application/json")
	}
	f.Add(`{"encodingId":"source"}`, "text/plain")
	st := LayerState{Layers: []Layer{{ID: SourceLayer, Width: 1280, Height: 720}, {ID: "360p", Width: 640, Height: 360}}, Active: "360p"}
	ids := []string{"", SourceLayer, "360p"}
	f.Fuzz(func(t *testing.T, body, contentType string) {
		r := httptest.NewRequest("POST", "/live/a/whep/s/layer", strings.NewReader(body))
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		sel, code, slug, detail := readSelection(r, st)
		if code != 0 {
			if code != 400 && code != 413 && code != 415 || problemTitles[slug] == "" || detail == "" {
				t.Fatalf("refused %q with %d %q %q", body, code, slug, detail)
			}
			return
		}
		pin, detail := choose(sel, st)
		if detail == "" && !slices.Contains(ids, pin) {
			t.Fatalf("%q chose %q, which the ladder lacks", body, pin)
		}
		if detail != "" && pin != "" {
			t.Fatalf("%q refused (%s) yet chose %q", body, detail, pin)
		}
	})
}
