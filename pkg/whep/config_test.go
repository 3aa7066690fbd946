package whep

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pion/transport/v5/stdnet"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

func TestNewRejects(t *testing.T) {
	src := newTestSource()
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no source", Config{UDPListen: "127.0.0.1:0"}, "Config.Source is nil"},
		{"no UDP address", Config{Source: src}, "Config.UDPListen is empty"},
		{"bad public IP", Config{Source: src, UDPListen: "127.0.0.1:0", PublicIPs: []string{"1.2.3"}}, `public IP "1.2.3" is not an IP address`},
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
	srv, hs := startServer(t, src, func(c *Config) { c.PublicIPs = []string{"203.0.113.7"} })
	resp, body := post(t, hs.URL+"/live/cam1/whep", "application/sdp", testkit.Offer(t, testkit.OfferOptions{}).SDP)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	port := srv.UDPAddr().String()[strings.LastIndex(srv.UDPAddr().String(), ":")+1:]
	if !strings.Contains(body, " 203.0.113.7 "+port+" typ host") {
		t.Errorf("answer does not advertise 203.0.113.7:%s:\n%s", port, body)
	}
	if strings.Contains(body, " 127.0.0.1 ") {
		t.Errorf("answer still advertises the private address:\n%s", body)
	}
}

// TestFilteredNet: the interface list the UDP mux enumerates on a wildcard
// bind honours Config.Interfaces.
func TestFilteredNet(t *testing.T) {
	sn, err := stdnet.NewNet()
	if err != nil {
		t.Fatal(err)
	}
	ifs, err := filteredNet{Net: sn, keep: interfaceFilter([]string{"lo"})}.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	if len(ifs) != 1 || ifs[0].Name != "lo" {
		var names []string
		for _, i := range ifs {
			names = append(names, i.Name)
		}
		t.Fatalf("got interfaces %v, want [lo]", names)
	}
}

func TestNetworkTypes(t *testing.T) {
	m := &muxes{}
	for _, c := range []struct {
		addr string
		want []webrtc.NetworkType
	}{
		{"127.0.0.1:1", []webrtc.NetworkType{webrtc.NetworkTypeUDP4}},
		{"0.0.0.0:1", []webrtc.NetworkType{webrtc.NetworkTypeUDP4}},
		{"[::]:1", []webrtc.NetworkType{webrtc.NetworkTypeUDP4, webrtc.NetworkTypeUDP6}},
		{"[::1]:1", []webrtc.NetworkType{webrtc.NetworkTypeUDP6}},
	} {
		m.udpAddr = mustUDPAddr(t, c.addr)
		got := networkTypes(m)
		if len(got) != len(c.want) || (len(got) > 0 && got[0] != c.want[0]) || (len(got) > 1 && got[1] != c.want[1]) {
			t.Errorf("%s: %v, want %v", c.addr, got, c.want)
		}
	}
}
