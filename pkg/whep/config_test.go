package whep

import (
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/plane"
)

func TestNewRejects(t *testing.T) {
	src := newTestSource()
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no source", Config{}, "Config.Source is nil"},
		{"no plane", Config{Source: src}, "Config.Plane is nil"},
	}
	for _, c := range cases {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestPublicIPs: with NAT 1:1 addresses configured, the answer advertises
// them in place of the bound address, same port.
func TestPublicIPs(t *testing.T) {
	src := newTestSource()
	src.publish("live/cam1")
	srv, hs := startServerNet(t, src, func(c *plane.Config) { c.PublicIPs = []string{"203.0.113.7"} }, nil)
	_, body := postOffer(t, hs.URL+"/live/cam1/whep")
	port := srv.UDPAddr().String()[strings.LastIndex(srv.UDPAddr().String(), ":")+1:]
	if !strings.Contains(body, " 203.0.113.7 "+port+" typ host") {
		t.Errorf("answer does not advertise 203.0.113.7:%s:\n%s", port, body)
	}
	if strings.Contains(body, " 127.0.0.1 ") {
		t.Errorf("answer still advertises the private address:\n%s", body)
	}
}
