//go:build linux

package mediaplane

import (
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// mmsghdr mirrors struct mmsghdr; x/sys/unix has no type for it.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

// sockaddr holds a struct sockaddr_in or sockaddr_in6 as the kernel reads
// and writes it, so neither direction converts through net.UDPAddr.
type sockaddr [unix.SizeofSockaddrInet6]byte

// set writes ap for a socket of the given family and returns the length
// the kernel expects; IPv4 peers of an AF_INET6 socket are v4-mapped.
func (sa *sockaddr) set(ap netip.AddrPort, inet6 bool) uint32 {
	*sa = sockaddr{}
	ip := ap.Addr().Unmap()
	binary.BigEndian.PutUint16(sa[2:4], ap.Port())
	if ip.Is4() && !inet6 {
		binary.NativeEndian.PutUint16(sa[0:2], unix.AF_INET)
		a := ip.As4()
		copy(sa[4:8], a[:])
		return unix.SizeofSockaddrInet4
	}
	binary.NativeEndian.PutUint16(sa[0:2], unix.AF_INET6)
	a := ip.As16()
	copy(sa[8:24], a[:])
	if z := ap.Addr().Zone(); z != "" {
		if ifi, err := net.InterfaceByName(z); err == nil {
			binary.NativeEndian.PutUint32(sa[24:28], uint32(ifi.Index))
		}
	}
	return unix.SizeofSockaddrInet6
}

// addrPort reads a received address; v4-mapped addresses come back as
// IPv4, so a peer has one key whatever the socket's family.
func (sa *sockaddr) addrPort() (netip.AddrPort, bool) {
	port := binary.BigEndian.Uint16(sa[2:4])
	switch binary.NativeEndian.Uint16(sa[0:2]) {
	case unix.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(sa[4:8])), port), true
	case unix.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(sa[8:24])).Unmap(), port), true
	}
	return netip.AddrPort{}, false
}

// socketIsInet6 asks the kernel the socket's family: Go opens wildcard
// "udp" sockets as dual-stack AF_INET6 even for 0.0.0.0.
func socketIsInet6(raw syscall.RawConn) (bool, error) {
	var inet6 bool
	var serr error
	err := raw.Control(func(fd uintptr) {
		var sa unix.Sockaddr
		sa, serr = unix.Getsockname(int(fd))
		_, inet6 = sa.(*unix.SockaddrInet6)
	})
	if err != nil {
		return false, err
	}
	return inet6, serr
}

// setDontFragment sets DF: WebRTC packets fit the path MTU by design, and
// the kernel skips the IP ID work fragmentable datagrams need.
func setDontFragment(raw syscall.RawConn, inet6 bool) {
	_ = raw.Control(func(fd uintptr) {
		if inet6 {
			_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_DO)
		}
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO)
	})
}
