package whep

import (
	"context"
	"net"

	"github.com/srtwhep/srtwhep/pkg/plane"
)

// The session (session.go) serves a viewer through a plane.Conn, the
// WebRTC connection as the session sees it; a Plane (mediaplane.Plane,
// which cmd/srtwhep builds) makes them. Everything else a session does
// (the hub reader and its queue, stamping, pacing, NACKs from the shared
// history, the congestion rule, sender reports, events and metrics) is
// this package's and pkg/rtpsend's.

// Plane is the shared machinery every viewer's connection runs on: the
// sockets and whatever serves them. Its counters are the plane's own: the
// composition root reads them from it, not through the Server.
type Plane interface {
	// Start binds the sockets; Run calls it once.
	Start() error
	// Answer builds the connection for the offer and returns it with the
	// complete answer. On error nothing is left open; an *sdpoffer.Error
	// means the offer is at fault. ctx bounds building the answer only.
	Answer(ctx context.Context, o plane.Offer) (plane.Conn, plane.Answer, error)
	UDPAddr() *net.UDPAddr
	TCPAddr() string // "" without ICE-TCP
	// Close ends the plane once every session has closed its connection.
	Close()
}
