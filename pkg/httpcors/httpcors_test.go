package httpcors

import (
	"net/http"
	"testing"
)

func TestAllow(t *testing.T) {
	h := http.Header{}
	Allow(h, "*")
	if h.Get("Access-Control-Allow-Origin") != "*" || h.Get("Access-Control-Expose-Headers") != "Location, ETag, Link, Accept-Patch" || h.Get("Vary") != "" {
		t.Errorf("any origin: %v", h)
	}
	// A named origin makes the answer differ by Origin, so a cache keeps
	// one copy per origin; a Vary set before stays.
	h = http.Header{"Vary": {"Accept"}}
	Allow(h, "https://player.example")
	if h.Get("Access-Control-Allow-Origin") != "https://player.example" || len(h.Values("Vary")) != 2 || h.Values("Vary")[1] != "Origin" {
		t.Errorf("one origin: %v", h)
	}
}

func TestPreflight(t *testing.T) {
	h := http.Header{}
	Preflight(h, "OPTIONS, POST", "Authorization, Content-Type")
	if h.Get("Access-Control-Allow-Methods") != "OPTIONS, POST" || h.Get("Access-Control-Allow-Headers") != "Authorization, Content-Type" ||
		h.Get("Access-Control-Max-Age") != PreflightMaxAge {
		t.Errorf("preflight: %v", h)
	}
}
