package whepevents

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzEventList: the body of a POST that creates an event stream is
// refused with a detail or yields a mask of known types only; a JSON array
// of strings is never refused.
func FuzzEventList(f *testing.F) {
	for _, seed := range []string{"", `["active","viewercount"]`, `["layers","scte35"]`, `{"a":1}`, `[1,2]`, "[", `[""]`, strings.Repeat(`"x",`, 2000)} {
		f.Add(seed, "application/json")
	}
	f.Add(`["active"]`, "text/plain")
	f.Fuzz(func(t *testing.T, body, contentType string) {
		r := httptest.NewRequest("POST", "/live/a/whep/s/sse", strings.NewReader(body))
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		want, detail := readEventList(r)
		if want&^allEvents != 0 {
			t.Fatalf("mask %b has unknown bits", want)
		}
		var names []string
		if detail == "" && strings.TrimSpace(body) != "" && json.Unmarshal([]byte(body), &names) != nil {
			t.Fatalf("accepted %q, which is no JSON array of strings", body)
		}
		if contentType == "application/json" && len(body) <= maxBody && json.Unmarshal([]byte(body), &names) == nil && detail != "" {
			t.Fatalf("refused the array %q: %s", body, detail)
		}
	})
}
