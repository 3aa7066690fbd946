package mediaplane

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/pion/ice/v4"
)

// hostCandidates renders the socket's host candidates: cfg.PublicIPs
// first (highest priority, as that is where a NATed server is reached),
// then cfg.HostIPs or the addresses the socket answers on. Only IP
// addresses: Firefox rejects names in candidates. With an ICE-TCP port,
// every address also gets a passive TCP candidate, after all UDP ones and
// below them in priority, so a viewer only falls back to TCP.
func hostCandidates(cfg Config, la *net.UDPAddr, tcpPort int) ([]string, error) {
	ips := slices.Clone(cfg.PublicIPs)
	host := cfg.HostIPs
	if len(host) == 0 {
		var err error
		if host, err = socketIPs(la); err != nil {
			return nil, err
		}
	}
	ips = append(ips, host...)
	var seen []netip.Addr
	for _, ip := range ips {
		ip = ip.Unmap()
		if !ip.IsValid() || ip.IsUnspecified() || slices.Contains(seen, ip) {
			continue
		}
		seen = append(seen, ip)
	}
	if len(seen) == 0 {
		return nil, errors.New("mediaplane: no address to advertise; set HostIPs or bind the socket to an address")
	}
	var out []string
	for _, tcp := range []bool{false, true} {
		if tcp && tcpPort == 0 {
			break
		}
		for i, ip := range seen {
			// Local preference falls with the position, so a viewer
			// tries the addresses in the order given; TCP's half of the
			// range lies below every UDP candidate's.
			pref := uint32(65534 - i)
			hc := &ice.CandidateHostConfig{Network: "udp", Address: ip.String(), Port: la.Port, Component: 1}
			if tcp {
				pref -= 1 << 15
				hc.Network, hc.Port, hc.TCPType = "tcp", tcpPort, ice.TCPTypePassive
			}
			hc.Priority = 126<<24 | pref<<8 | 255
			c, err := ice.NewCandidateHost(hc)
			if err != nil {
				return nil, fmt.Errorf("mediaplane: candidate for %v: %w", ip, err)
			}
			out = append(out, c.Marshal())
		}
	}
	return out, nil
}

// socketIPs is what a socket bound to la answers on: its address, or for
// a wildcard every address of the interfaces that are up (IPv4 only for
// 0.0.0.0), leaving out link-local ones, and loopback unless nothing else
// is there.
func socketIPs(la *net.UDPAddr) ([]netip.Addr, error) {
	ips, loopback, err := interfaceIPs(la, nil, false)
	if len(ips) == 0 {
		return loopback, err
	}
	return ips, err
}

// interfaceIPs is the one enumeration of the addresses a socket bound to
// la answers on: its address when bound to one, else every address of the
// interfaces that are up (only those named, when names is not empty; IPv4
// only for 0.0.0.0), without link-local ones. Loopback addresses are in
// ips, in interface order, when withLoopback is set, else in loopback.
func interfaceIPs(la *net.UDPAddr, names []string, withLoopback bool) (ips, loopback []netip.Addr, err error) {
	bound, _ := netip.AddrFromSlice(la.IP)
	bound = bound.Unmap()
	if bound.IsValid() && !bound.IsUnspecified() {
		return []netip.Addr{bound}, nil, nil
	}
	v4only := la.IP.To4() != nil
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, nil, fmt.Errorf("mediaplane: list interfaces: %w", err)
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || (len(names) > 0 && !slices.Contains(names, ifc.Name)) {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			pfx, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(pfx.IP)
			ip = ip.Unmap()
			switch {
			case !ok, ip.IsLinkLocalUnicast(), v4only && !ip.Is4():
			case ip.IsLoopback() && !withLoopback:
				loopback = append(loopback, ip)
			default:
				ips = append(ips, ip)
			}
		}
	}
	return ips, loopback, nil
}

// HostIPs are the addresses the answer's candidates carry for a socket
// bound to la: publicIPs alone when set (NAT 1:1 replaces the local
// addresses), else the bound
// address, else every address of the named interfaces (all when none
// are), loopback only when asked for.
func HostIPs(la *net.UDPAddr, publicIPs, interfaces []string, includeLoopback bool) ([]netip.Addr, error) {
	if len(publicIPs) > 0 {
		var out []netip.Addr
		for _, s := range publicIPs {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("mediaplane: public IP %q: %w", s, err)
			}
			out = append(out, a.Unmap())
		}
		return out, nil
	}
	out, _, err := interfaceIPs(la, interfaces, includeLoopback)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("mediaplane: no address to advertise on %v (interfaces %v); set webrtc.listenIP or webrtc.publicIPs", la, interfaces)
	}
	return out, nil
}
