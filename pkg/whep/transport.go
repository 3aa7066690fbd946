package whep

import (
	"context"
	"net"
	"sync"
	"sync/atomic"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/sockbuf"
)

// The session (session.go) serves a viewer through a transport, the
// WebRTC connection as its serve loop sees it; a plane makes the
// transports. Two planes exist, chosen by Config.MediaPlane: pion's, a
// PeerConnection per viewer (pion.go), and srtwhep's own, pkg/mediaplane
// (own.go). Everything else a session does (the hub reader and its
// queue, stamping, pacing, NACKs from the shared history, the congestion
// rule, sender reports, events and metrics) is the same code for both.

// Media planes, the values of Config.MediaPlane.
const (
	MediaPlanePion = "pion"
	MediaPlaneOwn  = "own"
)

// plane is the shared machinery every session's transport runs on: the
// sockets and whatever serves them.
type plane interface {
	// answer builds the transport for sess's offer and returns it with
	// the complete SDP answer. On error nothing is left open; an *sdpoffer.Error
	// means the offer is at fault. audio answers the offer's audio
	// section with Opus. ctx bounds building the answer only.
	answer(ctx context.Context, sess *session, audio bool) (transport, string, error)
	udpAddr() *net.UDPAddr
	tcpAddr() string // "" without ICE-TCP
	// udpDrops is the shared socket's kernel drop counter, nil when
	// unavailable.
	udpDrops() *sockbuf.Drops
	// udpCounts are the media datagrams handed to the kernel and those it
	// refused.
	udpCounts() (datagrams, refused uint64)
	// close ends the plane once every session has closed its transport.
	close()
}

// transport is one viewer's WebRTC connection. The write methods are
// called by the session's writer goroutine only.
type transport interface {
	// connected is closed once media may flow.
	connected() <-chan struct{}
	// iceStarted reports whether the viewer has sent a valid ICE check.
	iceStarted() bool
	// state names the connection's state for the API and metrics:
	// "new", "connecting", "connected", "failed" or "closed".
	state() string
	// ssrcs are the SSRCs the answer announced; audio is 0 without audio.
	ssrcs() (video, audio uint32)
	// answeredUfrag is our ICE ufrag in the answer the plane built the
	// transport with (the session's first ETag), as the plane generated
	// it: the server does not parse its own answer back.
	answeredUfrag() string
	// writeVideo sends one frame's packets (or NACKed ones) and returns
	// how many went out; an error means the transport is going away.
	writeVideo(pkts []rtp.Packet) (int, error)
	writeAudio(pkt *rtp.Packet) error
	writeRTCP(pkts []rtcp.Packet) error
	// trickle takes candidates the viewer sent in a PATCH; an error is
	// the viewer's fault (400).
	trickle(candidates []string) error
	// restartICE starts a new ICE generation for the viewer's new
	// credentials in frag (offerSDP is its offer with them) and returns
	// ours. An *sdpoffer.Error is the viewer's fault; any other error leaves the
	// transport unusable.
	restartICE(ctx context.Context, offerSDP string, frag sdpFrag) (localICE, error)
	// close ends the transport, with an RTCP BYE and DTLS close_notify to
	// a connected viewer, and returns once nothing of it calls into the
	// session any more.
	close()
}

// nackBox carries NACKed sequence numbers from whoever reads the viewer's
// RTCP to the session's writer goroutine, which resends them between
// frames, so every media write of a viewer happens on one goroutine and
// reading RTCP never writes. It also wakes the writer when it waits for
// the next frame: the writer waits with a context from waitCtx, which a
// NACK cancels.
type nackBox struct {
	// wake, when set, is told of each NACK: a writer stepped by a pool
	// (writer.go) waits in no context.
	wake   atomic.Pointer[func()]
	mu     sync.Mutex
	seqs   []uint16
	ctx    context.Context // the writer's current wait; nil once cancelled
	cancel context.CancelFunc
}

// add queues the sequence numbers of n and wakes the writer.
func (b *nackBox) add(n *rtcp.TransportLayerNack) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, pair := range n.Nacks {
		pair.Range(func(seq uint16) bool {
			// Past the bound they are dropped; the viewer asks again
			// for what still matters.
			if len(b.seqs) >= maxResendPerNACK {
				return false
			}
			b.seqs = append(b.seqs, seq)
			return true
		})
	}
	if b.cancel != nil {
		b.cancel()
		b.ctx, b.cancel = nil, nil
	}
	if w := b.wake.Load(); w != nil {
		(*w)()
	}
}

func (b *nackBox) setWake(wake func()) { b.wake.Store(&wake) }

// take moves the waiting sequence numbers into dst.
func (b *nackBox) take(dst []uint16) []uint16 {
	b.mu.Lock()
	defer b.mu.Unlock()
	dst = append(dst[:0], b.seqs...)
	b.seqs = b.seqs[:0]
	return dst
}

// waitCtx is the context the writer waits for frames with: a child of
// parent that the next NACK cancels. It is made again only after a NACK,
// not for every frame.
func (b *nackBox) waitCtx(parent context.Context) context.Context {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx == nil {
		b.ctx, b.cancel = context.WithCancel(parent)
	}
	return b.ctx
}
