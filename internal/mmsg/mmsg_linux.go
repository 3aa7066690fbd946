package mmsg

import (
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Supported reports whether this platform has the batched system calls.
const Supported = true

// Hdr mirrors the kernel's struct mmsghdr, which golang.org/x/sys/unix
// does not declare: a struct msghdr and the byte count the kernel writes
// back.
//
// No explicit padding: C pads the struct to the alignment of msghdr (its
// pointers), and Go pads a struct's size to its alignment the same way.
// On amd64 and arm64 that is 56+4 bytes rounded up to 64; on 32-bit
// Linux 28+4 = 32 with none. A hand-written `_ [4]byte` tail would be
// right on 64-bit only and would shift every element of an array by 4
// bytes on 32-bit, so the layout is left to the compiler and checked
// below.
type Hdr struct {
	Msghdr unix.Msghdr
	Len    uint32
}

// sizeofHdr is sizeof(struct mmsghdr) as C computes it.
const sizeofHdr = (unix.SizeofMsghdr + 4 + unsafe.Alignof(uintptr(0)) - 1) &^ (unsafe.Alignof(uintptr(0)) - 1)

// Compile-time checks: either array length goes negative (a build error)
// if Go's layout of Hdr ever differs from C's.
var (
	_ [sizeofHdr - unsafe.Sizeof(Hdr{})]byte
	_ [unsafe.Sizeof(Hdr{}) - sizeofHdr]byte
	_ [unsafe.Offsetof(Hdr{}.Len) - unix.SizeofMsghdr]byte
	_ [unix.SizeofMsghdr - unsafe.Offsetof(Hdr{}.Len)]byte
)

// Sockaddr holds a struct sockaddr_in or sockaddr_in6 as the kernel reads
// and writes it, so neither direction converts through net.UDPAddr or
// unix.Sockaddr (both allocate). Unused bytes are zero, so two Sockaddrs
// of one peer compare equal.
type Sockaddr [unix.SizeofSockaddrInet6]byte

// Set writes ap for a socket of the given family and returns the length
// the kernel expects. IPv4 peers of an AF_INET6 socket are v4-mapped; a
// zone names the interface of a link-local IPv6 peer.
func (sa *Sockaddr) Set(ap netip.AddrPort, inet6 bool) uint32 {
	*sa = Sockaddr{}
	ip := ap.Addr().Unmap()
	// sin_port and sin6_port sit at the same offset, in network byte order.
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

// AddrPort reads an address the kernel wrote. v4-mapped addresses come
// back as IPv4, so a peer has one key whatever the socket's family.
func (sa *Sockaddr) AddrPort() (netip.AddrPort, bool) {
	port := binary.BigEndian.Uint16(sa[2:4])
	switch binary.NativeEndian.Uint16(sa[0:2]) {
	case unix.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(sa[4:8])), port), true
	case unix.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(sa[8:24])).Unmap(), port), true
	}
	return netip.AddrPort{}, false
}

// IsInet6 asks the kernel the socket's family: Go opens wildcard "udp"
// sockets as dual-stack AF_INET6 even for 0.0.0.0, so the listen address
// does not tell.
func IsInet6(rc syscall.RawConn) (bool, error) {
	var inet6 bool
	var serr error
	err := rc.Control(func(fd uintptr) {
		var sa unix.Sockaddr
		sa, serr = unix.Getsockname(int(fd))
		_, inet6 = sa.(*unix.SockaddrInet6)
	})
	if err != nil {
		return false, err
	}
	return inet6, serr
}

// SetDontFragment sets DF on the socket (best effort): WebRTC packets fit
// the path MTU by design, and with DF the kernel skips the per-packet IP
// ID work fragmentable datagrams need.
func SetDontFragment(rc syscall.RawConn, inet6 bool) {
	_ = rc.Control(func(fd uintptr) {
		if inet6 {
			_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_DO)
		}
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO)
	})
}

// SendTo sends one datagram on a non-blocking socket and returns the
// kernel's error (EAGAIN when the send buffer is full; the caller decides
// how to wait). RawSyscall: a non-blocking call never sleeps, so there is
// no reason to let the scheduler hand the P to another thread.
func SendTo(fd uintptr, b []byte, to *Sockaddr, nlen uint32) syscall.Errno {
	_, _, e := syscall.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)),
		0, uintptr(unsafe.Pointer(&to[0])), uintptr(nlen))
	return e
}

// controlBuffer returns n bytes aligned for struct cmsghdr (a []uint64's
// backing array), which the kernel and unix.Cmsghdr casts assume.
func controlBuffer(n int) []byte {
	if n == 0 {
		return nil
	}
	words := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)
}
