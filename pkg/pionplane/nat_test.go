package pionplane

import (
	"net"
	"slices"
	"testing"

	"github.com/pion/webrtc/v4"
)

// TestPublicFamilies: with public IPs of one family, local addresses and
// network types of the other family are dropped; without public IPs
// nothing is.
func TestPublicFamilies(t *testing.T) {
	all := []webrtc.NetworkType{webrtc.NetworkTypeUDP4, webrtc.NetworkTypeUDP6, webrtc.NetworkTypeTCP4, webrtc.NetworkTypeTCP6}
	for _, c := range []struct {
		ips          []string
		want         []webrtc.NetworkType
		keep4, keep6 bool
	}{
		{nil, all, true, true},
		{[]string{"203.0.113.7"}, []webrtc.NetworkType{webrtc.NetworkTypeUDP4, webrtc.NetworkTypeTCP4}, true, false},
		{[]string{"2001:db8::1"}, []webrtc.NetworkType{webrtc.NetworkTypeUDP6, webrtc.NetworkTypeTCP6}, false, true},
		{[]string{"203.0.113.7", "2001:db8::1"}, all, true, true},
	} {
		if got := keepPublicFamilies(all, c.ips); !slices.Equal(got, c.want) {
			t.Errorf("%v: network types %v, want %v", c.ips, got, c.want)
		}
		keep := publicFamilyFilter(c.ips)
		if c.ips == nil {
			if keep != nil {
				t.Errorf("no public IPs: want no address filter")
			}
			continue
		}
		if keep(net.ParseIP("172.17.0.2")) != c.keep4 || keep(net.ParseIP("fd00::2")) != c.keep6 {
			t.Errorf("%v: keeps 172.17.0.2=%v fd00::2=%v, want %v %v", c.ips,
				keep(net.ParseIP("172.17.0.2")), keep(net.ParseIP("fd00::2")), c.keep4, c.keep6)
		}
	}
}

// TestFamilyConn: a connection accepted on any local address reports the
// key that GetConnByUfrag registers, so the ICE-TCP mux finds the
// candidate that survived de-duplication.
func TestFamilyConn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := familyListener{ln}
	defer fl.Close()
	done := make(chan net.Conn, 1)
	go func() {
		c, err := fl.Accept()
		if err != nil {
			done <- nil
			return
		}
		done <- c
	}()
	cc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	sc := <-done
	if sc == nil {
		t.Fatal("accept failed")
	}
	defer sc.Close()
	la := sc.LocalAddr().(*net.TCPAddr)
	if !la.IP.Equal(familyIP(net.ParseIP("10.0.0.1"))) || la.Port != ln.Addr().(*net.TCPAddr).Port {
		t.Errorf("accepted conn local address %v, want 0.0.0.0:%d", la, ln.Addr().(*net.TCPAddr).Port)
	}
	if !familyIP(net.ParseIP("::ffff:10.0.0.1")).Equal(net.IPv4zero) || !familyIP(net.ParseIP("fd00::2")).Equal(net.IPv6unspecified) {
		t.Error("familyIP does not map v4-mapped to IPv4 and IPv6 to ::")
	}
}
