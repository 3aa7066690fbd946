//go:build linux

package mediaplane

import (
	"net/netip"
	"syscall"

	"github.com/srtwhep/srtwhep/internal/mmsg"
)

// sockaddr holds a struct sockaddr_in or sockaddr_in6 as the kernel reads
// and writes it (see mmsg.Sockaddr), so neither direction converts
// through net.UDPAddr.
type sockaddr mmsg.Sockaddr

// set writes ap for a socket of the given family and returns the length
// the kernel expects; IPv4 peers of an AF_INET6 socket are v4-mapped.
func (sa *sockaddr) set(ap netip.AddrPort, inet6 bool) uint32 {
	return (*mmsg.Sockaddr)(sa).Set(ap, inet6)
}

// socketIsInet6 asks the kernel the socket's family: Go opens wildcard
// "udp" sockets as dual-stack AF_INET6 even for 0.0.0.0.
func socketIsInet6(raw syscall.RawConn) (bool, error) { return mmsg.IsInet6(raw) }

// setDontFragment sets DF: WebRTC packets fit the path MTU by design, and
// the kernel skips the IP ID work fragmentable datagrams need.
func setDontFragment(raw syscall.RawConn, inet6 bool) { mmsg.SetDontFragment(raw, inet6) }
