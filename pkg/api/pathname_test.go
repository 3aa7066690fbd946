package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/auth"
)

// A name no path can have is a 400 with a short answer, and never reaches
// the path source. (Dot and empty segments never get here: ServeMux
// redirects to the cleaned URL.)
func TestInvalidPathNames(t *testing.T) {
	src := &table{}
	h := Handler(Config{Paths: src, Sessions: src, Authorizer: auth.NewPolicy(auth.Rules{}, auth.ThrottleConfig{})})
	long := strings.Repeat("x", 10<<10)
	for _, c := range []struct{ method, url string }{
		{"GET", "/v1/paths/" + long},
		{"DELETE", "/v1/publishers/" + long},
		{"GET", "/v1/paths/a%20b"},
		{"DELETE", "/v1/publishers/live/~%00"},
	} {
		w := do(t, h, c.method, c.url, "127.0.0.1:4000", "")
		if w.Code != http.StatusBadRequest || w.Body.Len() > 400 || !strings.Contains(w.Body.String(), "invalid path name") {
			t.Errorf("%s %.40s…: %d, %d bytes: %.200s", c.method, c.url, w.Code, w.Body.Len(), w.Body)
		}
	}
	if len(src.kicked) != 0 {
		t.Errorf("invalid names reached the source: %q", src.kicked)
	}
}
