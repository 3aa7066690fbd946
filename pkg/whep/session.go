package whep

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/plane"
)

// session is one viewer: its connection (plane.go) and its reader.
type session struct {
	id, path, remote string
	since            time.Time
	log              *slog.Logger
	reader           Reader

	// clientKey is whose handshake slot the session holds until it is
	// connected (see awaitConnected).
	clientKey string

	// tr is set before the session is registered and never changes.
	tr plane.Conn
	// videoSSRC is the SSRC NACKs and receiver reports must name to count
	// (see onRTCP); set once the transport exists.
	videoSSRC atomic.Uint32
	// history answers NACKs from the shared payloads (see retransmit.go).
	history    history
	retransmit atomic.Uint64
	// nacks carries NACKs from the RTCP reader to the writer; resendBuf
	// is the writer's for the packets it resends.
	nacks     nackBox
	resendBuf []rtp.Packet
	// congestion is the rule that skips a viewer's video to the next IDR
	// when its link loses too much (congestion.go). Only onRTCP uses it,
	// and the transport never runs two onRTCP calls at once, nor any after
	// its close.
	congestion congestion

	ctx    context.Context
	cancel context.CancelCauseFunc

	// opened: the reader.opened event went out (session goroutine only).
	opened bool

	// sigMu serialises signalling (PATCH) on the transport and guards the
	// fields below.
	sigMu       sync.Mutex
	offer       offer
	offerSDP    string
	etag        string
	answeredSDP string

	packets atomic.Uint64
	bytes   atomic.Uint64
}

func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24
	return hex.EncodeToString(b[:])
}

func (sess *session) info() SessionInfo {
	si := SessionInfo{
		ID:          sess.id,
		Path:        sess.path,
		Remote:      sess.remote,
		State:       sess.tr.State(),
		Since:       sess.since,
		PacketsSent: sess.packets.Load(),
		BytesSent:   sess.bytes.Load(),
	}
	if d, ok := sess.reader.(droppedCounter); ok {
		si.Dropped = d.Dropped()
	}
	return si
}

// answer makes sess's connection on p and records the answer. The
// session's context derives from base (the server's run context), while
// ctx only bounds building the answer (the HTTP request). On error nothing
// is left open.
func (sess *session) answer(ctx, base context.Context, p Plane, audio bool) (string, error) {
	sess.ctx, sess.cancel = context.WithCancelCause(base)
	o := sess.offer
	po := plane.Offer{
		Session: sess.ctx,
		SDP:     sess.offerSDP,
		Video:   plane.Codec{PayloadType: o.payloadType, Fmtp: o.fmtp()},
		OnRTCP:  sess.onRTCP,
		// Whatever ends the connection on its own ends the session, whose
		// writer may be waiting for a frame.
		OnDone: func(reason error) { sess.cancel(endReason(reason)) },
		Log:    sess.log,
	}
	if audio {
		po.Audio = &plane.Codec{PayloadType: o.audioPT, Fmtp: plane.OpusFmtp}
	}
	tr, a, err := p.Answer(ctx, po)
	if err != nil {
		sess.cancel(errors.New("answer failed"))
		return "", planeError(err)
	}
	sess.tr = tr
	video, _ := tr.SSRCs()
	sess.videoSSRC.Store(video)
	sess.answeredSDP = a.SDP
	sess.etag = quoteETag(a.ICE.Ufrag)
	return a.SDP, nil
}

// errTransportFailed ends a session whose connection failed (a DTLS
// alert, say).
var errTransportFailed = errors.New("connection failed")

// endReason maps why a connection ended to the session's reasons, so logs
// and the handshake-failure count read the same on both planes.
func endReason(err error) error {
	switch {
	case errors.Is(err, plane.ErrPeerClosed):
		return errPCClosed
	case errors.Is(err, plane.ErrICEFailed):
		return errICEFailed
	case errors.Is(err, plane.ErrHandshakeTimeout):
		return errHandshakeTimeout
	case errors.Is(err, plane.ErrServerClosed):
		return errServerShutdown
	}
	return fmt.Errorf("%w: %v", errTransportFailed, err)
}

// planeError maps a plane's refusal to the handler's: an offer at fault
// is a *badOffer (400), a closing plane a shutdown (503).
func planeError(err error) error {
	var oe *plane.OfferError
	switch {
	case errors.As(err, &oe):
		return &badOffer{msg: oe.Msg}
	case errors.Is(err, plane.ErrServerClosed):
		return errServerShutdown
	}
	return err
}

func quoteETag(ufrag string) string { return `"` + ufrag + `"` }

// onRTCP takes the RTCP the viewer sent: NACKs go to the writer, which
// answers them from the viewer's shared-payload history, and receiver
// reports drive the congestion rule (congestion.go). A compound packet may
// name other senders' SSRCs, so a NACK or a report block counts only for
// the video SSRC it is about. It must not block: on the own media plane it
// runs on the goroutine that reads every viewer's RTCP.
func (sess *session) onRTCP(pkts []rtcp.Packet) {
	video := sess.videoSSRC.Load()
	for _, p := range pkts {
		switch p := p.(type) {
		case *rtcp.TransportLayerNack:
			if p.MediaSSRC == video && !sess.congestion.congested {
				sess.nacks.add(p)
			}
		case *rtcp.ReceiverReport:
			sess.onReport(p.Reports, video)
		case *rtcp.SenderReport: // from a viewer that also sends media (RFC 3550 §6.4)
			sess.onReport(p.Reports, video)
		}
	}
}

// runSession is the session's goroutine, counted in s.wg by addSession. It
// owns the handshake slot taken at POST, the connection and the reader.
// Once the viewer is connected it hands the session's writer to the
// connection, which runs it, and ends; the session's end then runs on a
// goroutine the writer starts when it finishes.
func (s *Server) runSession(sess *session) {
	if err := s.awaitConnected(sess); err != nil {
		s.endSession(sess, err)
		return
	}
	sess.tr.Drive(s.startWriter(sess))
}

// endSession closes what the session holds and reports why it ended; it
// marks the end of the session's goroutine in s.wg.
func (s *Server) endSession(sess *session, reason error) {
	defer s.wg.Done()
	sess.cancel(reason)
	reason = context.Cause(sess.ctx)
	sess.tr.Close()
	sess.reader.Close()
	if cur := s.lookupSession(sess.id); cur == sess {
		s.removeSession(sess.id)
	}
	packets := sess.packets.Load()
	s.stats.closedPackets.Add(packets)
	s.stats.closedBytes.Add(sess.bytes.Load())
	s.readerClosed(sess, reason)
	attrs := []any{"reason", reason.Error(),
		"duration", time.Since(sess.since).Round(time.Millisecond).String(), "packets", packets}
	if n := sess.congestion.skips; n > 0 { // the transport delivers no more RTCP
		attrs = append(attrs, "congestion_skips", n)
	}
	sess.log.Info("viewer closed", attrs...)
}

func framePTS(f hub.Frame) int64 {
	if f.Video != nil {
		return f.Video.PTS
	}
	return f.Audio.PTS
}
