package pionplane

import (
	"net"
	"net/netip"

	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v4"
)

// NAT 1:1 (Config.PublicIPs) on a wildcard bind, as in a Docker container
// whose ports the host publishes: every local address of a family is
// rewritten to that family's public IP, so viewers see one candidate per
// public IP and never a container-bridge or other private address.

// publicFamilies reports which address families have a public IP.
func publicFamilies(ips []string) (v4, v6 bool) {
	for _, s := range ips {
		if a, err := netip.ParseAddr(s); err == nil {
			if a.Unmap().Is4() {
				v4 = true
			} else {
				v6 = true
			}
		}
	}
	return v4, v6
}

// publicFamilyFilter passes only local addresses of a family that has a
// public IP: pion leaves addresses without a matching rewrite rule as they
// are, which would advertise, say, a private IPv6 next to the public IPv4.
// nil when no public IPs are set.
func publicFamilyFilter(ips []string) func(net.IP) bool {
	if len(ips) == 0 {
		return nil
	}
	v4, v6 := publicFamilies(ips)
	return func(ip net.IP) bool {
		if ip.To4() != nil {
			return v4
		}
		return v6
	}
}

// keepPublicFamilies drops the network types of families without a public
// IP; with no public IPs it returns nts unchanged.
func keepPublicFamilies(nts []webrtc.NetworkType, ips []string) []webrtc.NetworkType {
	if len(ips) == 0 {
		return nts
	}
	v4, v6 := publicFamilies(ips)
	out := nts[:0:0]
	for _, nt := range nts {
		switch nt {
		case webrtc.NetworkTypeUDP4, webrtc.NetworkTypeTCP4:
			if v4 {
				out = append(out, nt)
			}
		default:
			if v6 {
				out = append(out, nt)
			}
		}
	}
	return out
}

// ICE-TCP on a wildcard listener with public IPs: pion gathers one passive
// candidate per local address and keys its TCP connections by that local
// address; once the addresses are rewritten to one public IP, only the
// first candidate survives (the rest are duplicates and their connections
// are closed). A viewer's connection then arrives on the container's own
// address (where DNAT sends it), finds no candidate for that address, and
// ICE-TCP never completes. Keying connections by address family only makes
// every local address lead to the candidate that was kept.

// familyIP is the key that stands for every local address of ip's family.
func familyIP(ip net.IP) net.IP {
	if ip.To4() != nil {
		return net.IPv4zero
	}
	return net.IPv6unspecified
}

// familyTCPMux passes family keys to the mux instead of local addresses.
type familyTCPMux struct{ ice.TCPMux }

func (m familyTCPMux) GetConnByUfrag(ufrag string, isIPv6 bool, local net.IP) (net.PacketConn, error) {
	return m.TCPMux.GetConnByUfrag(ufrag, isIPv6, familyIP(local))
}

// familyListener makes the connections it accepts report the family key
// as their local address, which is what the mux looks connections up by.
type familyListener struct{ net.Listener }

func (l familyListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return familyConn{c}, nil
}

type familyConn struct{ net.Conn }

func (c familyConn) LocalAddr() net.Addr {
	a, ok := c.Conn.LocalAddr().(*net.TCPAddr)
	if !ok {
		return c.Conn.LocalAddr()
	}
	return &net.TCPAddr{IP: familyIP(a.IP), Port: a.Port}
}
