//go:build !linux

package mediaplane

import (
	"net/netip"
	"syscall"
)

// sockaddr is only an address off Linux: datagrams go out one by one
// through the net package.
type sockaddr struct{ ap netip.AddrPort }

func (sa *sockaddr) set(ap netip.AddrPort, _ bool) uint32 { sa.ap = ap; return 0 }

func socketIsInet6(syscall.RawConn) (bool, error) { return false, nil }

func setDontFragment(syscall.RawConn, bool) {}
