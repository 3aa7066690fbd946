package pionplane

import (
	"net"
	"testing"

	"github.com/pion/transport/v5/stdnet"
	"github.com/pion/webrtc/v4"
)

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

func mustUDPAddr(t *testing.T, s string) *net.UDPAddr {
	t.Helper()
	a, err := net.ResolveUDPAddr("udp", s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
