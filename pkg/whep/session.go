package whep

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"

	"github.com/srtwhep/srtwhep/pkg/admission"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/rtpsend"
	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

// session is one viewer: its connection (plane.go) and its reader.
type session struct {
	id, path, remote string
	since            time.Time
	log              *slog.Logger
	reader           Reader

	// clientKey is whose offer bucket the viewer raises once connected;
	// held is the pending slot, then handshake slot, it holds until then
	// (see awaitConnected).
	clientKey string
	held      *admission.Offer
	// iceStarted is closed, once (iceOnce), when the plane reports the
	// viewer's ICE has started (plane.Offer.OnICEStart).
	iceStarted chan struct{}
	iceOnce    sync.Once

	// tr is set before the session is registered and never changes.
	tr plane.Conn
	// snd is the session's sender (pkg/rtpsend), set once the viewer is
	// connected; RTCP before that has nothing to act on.
	snd atomic.Pointer[rtpsend.Sender]
	// src is what the sender reads in place of reader
	// (Config.SenderSource), nil for the reader itself; set before the
	// session runs and never changed.
	src SenderSource

	ctx    context.Context
	cancel context.CancelCauseFunc

	// opened: the reader.opened event went out (session goroutine only).
	opened bool

	// sigMu serialises signalling (PATCH) on the connection and guards
	// the fields below.
	sigMu       sync.Mutex
	offer       *sdpoffer.Offer
	etag        string
	answeredSDP string
}

func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24
	return hex.EncodeToString(b[:])
}

func (sess *session) info() SessionInfo {
	si := SessionInfo{
		ID:     sess.id,
		Path:   sess.path,
		Remote: sess.remote,
		State:  sess.tr.State(),
		Since:  sess.since,
	}
	si.PacketsSent, si.BytesSent = sess.sent()
	si.Dropped = sess.reader.Dropped()
	if snd := sess.snd.Load(); snd != nil {
		si.Estimate, si.Started = snd.Estimate(), snd.Started()
	}
	return si
}

// answer makes sess's connection on p and records the answer. The
// session's context derives from base (the server's run context), while
// ctx only bounds building the answer (the HTTP request). On error nothing
// is left open.
func (sess *session) answer(ctx, base context.Context, p Plane, audio bool) (string, error) {
	sess.ctx, sess.cancel = context.WithCancelCause(base)
	sess.iceStarted = make(chan struct{})
	o := sess.offer
	po := plane.Offer{
		Session: sess.ctx,
		Model:   o,
		Video:   plane.VideoCodec(o),
		OnRTCP:  sess.onRTCP,
		// Whatever ends the connection on its own ends the session, whose
		// sender may be waiting for a frame.
		OnDone:     func(reason error) { sess.cancel(reason) },
		OnICEStart: func() { sess.iceOnce.Do(func() { close(sess.iceStarted) }) },
		Log:        sess.log,
	}
	if audio {
		po.Audio = &plane.Codec{PayloadType: plane.OpusPT(o), Fmtp: plane.OpusFmtp}
	}
	tr, a, err := p.Answer(ctx, po)
	if err != nil {
		sess.cancel(errors.New("answer failed"))
		return "", err
	}
	if a.Ufrag == "" {
		err := errors.New("the media plane answered without an ICE ufrag")
		sess.cancel(err)
		tr.Close()
		return "", err
	}
	sess.tr = tr
	sess.answeredSDP = a.SDP
	sess.etag = quoteETag(a.Ufrag)
	return a.SDP, nil
}

func quoteETag(ufrag string) string { return `"` + ufrag + `"` }

// onRTCP hands the RTCP the viewer sent to its sender (NACKs, receiver
// reports); before the viewer is connected there is nothing to act on. It
// must not block: on the own media plane it runs on the goroutine that
// reads every viewer's RTCP.
func (sess *session) onRTCP(pkts []rtcp.Packet) {
	if snd := sess.snd.Load(); snd != nil {
		snd.OnRTCP(pkts)
	}
}

// runSession is the session's goroutine, counted in s.wg by addSession. It
// owns the pending slot taken at POST (and the handshake slot that
// replaces it when ICE starts), the connection and the reader.
// Once the viewer is connected it hands the session's sender to the
// connection, which runs it, and ends; the session's end then runs on a
// goroutine the sender's OnEnd starts when it finishes.
func (s *Server) runSession(sess *session) {
	if err := s.awaitConnected(sess); err != nil {
		s.endSession(sess, err)
		return
	}
	sess.tr.Drive(s.startSender(sess))
}

// sent is what the session's sender put on the wire, 0 before it exists.
func (sess *session) sent() (packets, bytes uint64) {
	if snd := sess.snd.Load(); snd != nil {
		return snd.Sent()
	}
	return 0, 0
}

// startSender attaches the connected session to its path and returns its
// sender, for the connection to drive.
func (s *Server) startSender(sess *session) *rtpsend.Sender {
	videoSSRC, audioSSRC := sess.tr.SSRCs()
	sess.sigMu.Lock()
	pt, audioPT := sess.offer.Sent().PT, plane.OpusPT(sess.offer)
	// The same decision the plane's answer wrote down.
	tcc := sess.offer.TransportCC(pt, audioPT)
	sess.sigMu.Unlock()
	var src rtpsend.Source = sess.reader
	if sess.src != nil {
		src = sess.src
	}
	cfg := rtpsend.Config{
		Out: sess.tr, Src: src,
		VideoSSRC: videoSSRC, AudioSSRC: audioSSRC, VideoPT: pt, AudioPT: audioPT,
		Session:          sess.ctx,
		Log:              sess.log,
		Latency:          s.cfg.Latency,
		Resends:          s.cfg.Resends,
		TransportCC:      tcc.ID,
		TransportCCAudio: tcc.Audio && audioSSRC != 0,
		// The session's end closes the connection, which may wait on a
		// link: not on the goroutine stepping the sender (a pool worker
		// serves other viewers).
		OnEnd: func(reason error) { go s.endSession(sess, reason) },
	}
	if s.cfg.BeforeWrite != nil {
		cfg.BeforeWrite = func() <-chan struct{} { return s.cfg.BeforeWrite(sess.id) }
	}
	snd := rtpsend.New(cfg)
	sess.snd.Store(snd)
	if sess.src != nil {
		sess.src.SenderStarted(snd)
	}
	// Attach only now, so a viewer still in ICE never fills a queue. What
	// the attach queues (the cached GOP) waits for the first Step, which
	// every driver runs at once.
	if audioSSRC != 0 {
		sess.reader.AttachAV()
	} else {
		sess.reader.Attach()
	}
	s.readerOpened(sess)
	// A viewer that connected raises its address's offer bucket while it
	// stays (admission.OfferBuckets): a crowd behind one address proves
	// itself viewer by viewer.
	s.admission.Offers.Joined(sess.clientKey)
	return snd
}

// endSession closes what the session holds and reports why it ended; it
// marks the end of the session's goroutine in s.wg.
func (s *Server) endSession(sess *session, reason error) {
	defer s.wg.Done()
	sess.cancel(reason)
	reason = context.Cause(sess.ctx)
	sess.tr.Close()
	sess.reader.Close()
	if sess.src != nil {
		sess.src.Close()
	}
	if cur := s.lookupSession(sess.id); cur == sess {
		s.removeSession(sess.id)
	}
	s.ended.Add(sess.id, sess.path)
	for _, ext := range s.cfg.Extensions {
		ext.SessionEnded(sess.id)
	}
	packets, bytes := sess.sent()
	s.stats.closedPackets.Add(packets)
	s.stats.closedBytes.Add(bytes)
	s.readerClosed(sess, reason)
	if sess.opened {
		s.admission.Offers.Left(sess.clientKey)
	}
	if errors.Is(reason, errICENotStarted) {
		// One line a second for all of them, with the count it held back.
		s.silentClosed.RefusedFrom(sess.remote, sess.path, http.StatusCreated, probICENotStarted,
			reason.Error()+": its checks never reached the server (a firewall, or webrtc.publicIPs missing behind NAT), or it never meant to connect", "")
		return
	}
	attrs := []any{"reason", reason.Error(),
		"duration", time.Since(sess.since).Round(time.Millisecond).String(), "packets", packets}
	if snd := sess.snd.Load(); snd != nil && snd.CongestionSkips() > 0 { // the connection delivers no more RTCP
		attrs = append(attrs, "congestion_skips", snd.CongestionSkips())
	}
	sess.log.Info("viewer closed", attrs...)
}
