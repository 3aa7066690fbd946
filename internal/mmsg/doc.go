// Package mmsg is the one sendmmsg(2)/recvmmsg(2) layer of the server and
// its load generator: the struct mmsghdr layout, reusable batches of
// messages with their iovecs, socket addresses and control buffers, UDP
// GSO (UDP_SEGMENT) on the send side, truncation flags and source
// addresses on the receive side.
//
// Every call is allocation-free once a batch exists, and a full socket
// buffer (EAGAIN) is waited out in Go's netpoller through
// syscall.RawConn, never by spinning on the system call.
//
// It exists on Linux only; elsewhere the package is empty and its users
// fall back to one datagram per call through package net.
package mmsg

// The kernel's limits for one segmented (GSO) message: UDP_MAX_SEGMENTS,
// and one IP datagram of at most 64 KiB less the IP and UDP headers.
const (
	MaxGSOSegments = 64
	MaxGSOBytes    = 65000
)
