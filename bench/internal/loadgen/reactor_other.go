//go:build !linux

package loadgen

import (
	"errors"
	"net"
	"net/netip"
	"time"
)

// DefaultPace matches the Linux build; unused here.
const DefaultPace = 5 * time.Millisecond

// The receive path relies on epoll and recvmmsg to stay cheaper than the
// server under test, and the ladder reads /proc: both are Linux only.
var errNotLinux = errors.New("loadgen: whep-loadgen runs on Linux only (epoll, recvmmsg, /proc)")

type reactor struct{}

type rsock struct{ net.PacketConn }

func (*rsock) connected() {}

func newReactor(time.Duration, bool, int) (*reactor, error)   { return nil, errNotLinux }
func (*reactor) open(netip.Addr, *accountant) (*rsock, error) { return nil, errNotLinux }
func (*reactor) Close() error                                 { return nil }
