package httpproblem

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestPrefersText(t *testing.T) {
	for _, c := range []struct {
		accept []string
		text   bool
	}{
		{nil, false},
		{[]string{"*/*"}, false}, // curl's default
		{[]string{"text/plain"}, true},
		{[]string{"text/plain; charset=utf-8"}, true},
		{[]string{"text/*"}, true},
		{[]string{"application/json, text/plain"}, false},
		{[]string{"application/problem+json;q=0.5, text/plain"}, true},
		{[]string{"text/plain;q=0.5, */*"}, false},
		{[]string{"text/plain;q=0"}, false},
		{[]string{"text/html"}, false},
		{[]string{"text/plain", "application/json;q=0.1"}, true},
		{[]string{"text/plain;q=0.9, application/*;q=0.5"}, true},
		{[]string{"garbage;;;"}, false},
	} {
		if got := prefersText(c.accept); got != c.text {
			t.Errorf("Accept %q: text %v, want %v", c.accept, got, c.text)
		}
	}
}

// TestWrite: the problem body with its type, title (the status text
// when none), one-line detail and the Retry-After mirrored; the text
// variant for a client that prefers it.
func TestWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Set("Retry-After", "3")
	Write(rec, httptest.NewRequest(http.MethodPost, "/", nil), http.StatusConflict, "no-publisher", "", "no\n  stream")
	var p Problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if rec.Header().Get("Content-Type") != MIME || p != (Problem{Type: TypeBase + "no-publisher", Title: "Conflict", Status: 409, Detail: "no stream", RetryAfter: 3}) {
		t.Errorf("%v %+v", rec.Header(), p)
	}
	rec = httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Header.Set("Accept", "text/plain")
	Write(rec, r, http.StatusNotFound, "x", "X", "gone <now>")
	if rec.Body.String() != "gone <now>\n" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("text: %q %v", rec.Body.String(), rec.Header())
	}
}
