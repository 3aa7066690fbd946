package whep

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/srtwhep/srtwhep/pkg/plane"
)

// TestPublicIPsWildcard: on a wildcard bind (the Docker default) with an
// IPv4 public IP, the answer carries that IP for UDP and ICE-TCP, on the
// bound ports, and no local address of any family: not the container's
// IPv4, not loopback, not a private or link-local IPv6 (pion leaves
// addresses without a rewrite rule for their family untouched).
func TestPublicIPsWildcard(t *testing.T) {
	src := newTestSource()
	src.publish("live/cam1")
	srv, hs := startServerNet(t, src, func(c *plane.Config) {
		c.UDPListen = ":0"
		c.TCPListen = ":0"
		c.IncludeLoopback = true
		c.PublicIPs = []string{"203.0.113.7"}
	}, nil)
	_, body := postOffer(t, hs.URL+"/live/cam1/whep")
	udpPort := srv.UDPAddr().(*net.UDPAddr).Port
	var udp, tcp int
	for _, l := range strings.Split(body, "\n") {
		if !strings.HasPrefix(l, "a=candidate:") {
			continue
		}
		f := strings.Fields(l)
		if len(f) < 8 || f[4] != "203.0.113.7" || f[7] != "host" {
			t.Errorf("candidate other than the public IP: %s", l)
			continue
		}
		switch strings.ToLower(f[2]) {
		case "udp":
			udp++
			if f[5] != strconv.Itoa(udpPort) {
				t.Errorf("UDP candidate port %s, want the mux port %d", f[5], udpPort)
			}
		case "tcp":
			tcp++
			if !strings.Contains(l, "tcptype passive") {
				t.Errorf("ICE-TCP candidate is not passive: %s", l)
			}
		}
	}
	if udp == 0 || tcp == 0 {
		t.Errorf("want UDP and TCP candidates on 203.0.113.7, got %d UDP and %d TCP:\n%s", udp, tcp, body)
	}
}
