package whep

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A POST for a name no path can have is a short 404 that touches nothing:
// the source never sees it and no handshake slot is taken.
func TestPostInvalidPathName(t *testing.T) {
	src := newTestSource()
	srv, hs := startServer(t, src, nil)
	for _, path := range []string{strings.Repeat("x", 10<<10), "live//cam", "a b", "live/%00", "live/cam%2F"} {
		resp, body := post(t, hs.URL+"/"+(&url.URL{Path: path}).EscapedPath()+"/whep", "application/sdp", "v=0")
		if resp.StatusCode != http.StatusNotFound || len(body) > 500 || !strings.Contains(body, "invalid path name") {
			t.Errorf("POST /%.20s…/whep: %d, %d bytes: %.200s", path, resp.StatusCode, len(body), body)
		}
	}
	if st := srv.Stats(); st.Sessions != 0 || st.HandshakesInFlight != 0 || st.Rejected["bad_offer"] != 5 {
		t.Errorf("after invalid names: %+v", st)
	}
}
