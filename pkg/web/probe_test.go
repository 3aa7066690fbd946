package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestProbe: a 2xx answer passes, anything else fails with the status,
// and an https health endpoint on loopback passes despite its certificate
// not naming 127.0.0.1.
func TestProbe(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	bad := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	for _, tc := range []struct {
		name    string
		srv     *httptest.Server
		wantErr string
	}{
		{"http ok", httptest.NewServer(ok), ""},
		{"http 503", httptest.NewServer(bad), "503"},
		{"https loopback", httptest.NewTLSServer(ok), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer tc.srv.Close()
			err := Probe(tc.srv.URL + "/healthz")
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Probe: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Probe: %v, want an error naming %s", err, tc.wantErr)
			}
		})
	}
}
