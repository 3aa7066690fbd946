package whep

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/rtph264"
)

// session is one viewer: its transport (transport.go) and its reader.
type session struct {
	id, path, remote string
	since            time.Time
	log              *slog.Logger
	reader           Reader

	// clientKey is whose handshake slot the session holds until it is
	// connected (see awaitConnected).
	clientKey string

	// tr is set before the session is registered and never changes.
	tr transport
	// videoSSRC is the SSRC NACKs and receiver reports must name to count
	// (see onRTCP); set once the transport exists.
	videoSSRC atomic.Uint32
	// history answers NACKs from the shared payloads (see retransmit.go).
	history    history
	retransmit atomic.Uint64
	// nacks carries NACKs from the RTCP reader to the writer goroutine;
	// resendBuf is the writer's for the packets it resends.
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
		State:       sess.tr.state(),
		Since:       sess.since,
		PacketsSent: sess.packets.Load(),
		BytesSent:   sess.bytes.Load(),
	}
	if d, ok := sess.reader.(droppedCounter); ok {
		si.Dropped = d.Dropped()
	}
	return si
}

// answer makes sess's transport on p and records the answer. The session's
// context derives from base (the server's run context), while ctx only
// bounds building the answer (the HTTP request). On error nothing is left
// open.
func (sess *session) answer(ctx, base context.Context, p plane, audio bool) (string, error) {
	sess.ctx, sess.cancel = context.WithCancelCause(base)
	tr, answer, err := p.answer(ctx, sess, audio)
	if err != nil {
		sess.cancel(errors.New("answer failed"))
		return "", err
	}
	li, err := localICEFrom(answer)
	if err != nil {
		sess.cancel(err)
		tr.close()
		return "", err
	}
	sess.tr = tr
	video, _ := tr.ssrcs()
	sess.videoSSRC.Store(video)
	sess.answeredSDP = answer
	sess.etag = quoteETag(li.ufrag)
	return answer, nil
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
// owns the handshake slot taken at POST, the transport and the reader.
func (s *Server) runSession(sess *session) {
	defer s.wg.Done()

	reason := s.serve(sess)

	sess.cancel(reason)
	reason = context.Cause(sess.ctx)
	sess.tr.close()
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

// serve waits for the connection, then writes access units until the
// session ends, and returns why it ended.
func (s *Server) serve(sess *session) error {
	if err := s.awaitConnected(sess); err != nil {
		return err
	}

	// Attach only now, so a viewer still in ICE never fills a queue.
	videoSSRC, audioSSRC := sess.tr.ssrcs()
	if audioSSRC != 0 {
		sess.reader.AttachAV()
	} else {
		sess.reader.Attach()
	}
	s.readerOpened(sess)
	sess.sigMu.Lock()
	pt, audioPT := sess.offer.payloadType, sess.offer.audioPT
	sess.sigMu.Unlock()
	st := rtph264.NewStamper(videoSSRC, pt, uint16(mrand.Uint32()), mrand.Uint32())
	st.SetCatchUpStep(uint32(catchUpInterval * av.ClockRate / time.Second))
	audio := opusStamper{ssrc: audioSSRC, pt: audioPT, seq: uint16(mrand.Uint32()), offset: mrand.Uint32()}
	var pkts []rtp.Packet
	var nacked []uint16
	pace := time.NewTimer(0)
	defer pace.Stop()
	<-pace.C
	// catchingUp lasts from attach until the writer reaches the live edge
	// (an empty queue): the cached GOP and whatever queued up while it went
	// out are all stamped as catch-up, so the browser plays them quickly and
	// then sits at the live edge instead of a GOP behind it.
	catchingUp := true
	// Sender reports start at the live edge: the clock is anchored there,
	// and catch-up video timestamps do not follow the PTS (see Stamp).
	var clock mediaClock
	videoReports := senderReporter{ssrc: videoSSRC}
	audioReports := senderReporter{ssrc: audioSSRC}
	videoLive := false // the last video AU went out on its PTS timeline
	// Frames are stamped from their place on the session's timeline, which
	// goes on across publishers (see timeline).
	var tl timeline
	for {
		// Checked first because a reader may prefer queued frames over a
		// done context, and an ended session must not drain its queue.
		if sess.ctx.Err() != nil {
			return context.Cause(sess.ctx)
		}
		if nacked = sess.nacks.take(nacked); len(nacked) > 0 {
			sess.retransmit.Add(uint64(sess.resend(nacked, pt)))
		}
		// The wait ends early for a NACK, which is answered at once
		// rather than after the next frame.
		f, err := sess.reader.RecvFrame(sess.nacks.waitCtx(sess.ctx))
		switch {
		case err == nil:
		case sess.ctx.Err() != nil:
			return context.Cause(sess.ctx)
		case errors.Is(err, hub.ErrEnded):
			return errPublisherGone
		case errors.Is(err, context.Canceled):
			continue // woken for a NACK
		default:
			return fmt.Errorf("reader: %w", err)
		}
		if s.cfg.BeforeWrite != nil {
			s.cfg.BeforeWrite(sess.id)
		}
		changes := tl.changes
		pts, ok := tl.place(f, time.Now())
		if !ok {
			continue
		}
		if tl.changes != changes {
			sess.log.Info("viewer continues with a new publisher")
		}
		backlog := sess.reader.Backlog()
		catchingUp = catchingUp && (f.CatchUp || backlog > 0)
		if !clock.set && !catchingUp && !f.CatchUp {
			clock.anchor(pts, time.Now())
		}
		if f.Audio != nil {
			// Audio goes out as it comes, between the paced video
			// frames, so the two stay interleaved in PTS order and a
			// one-packet frame adds no burst worth pacing.
			sess.sendAudio(&audio, f.Audio, pts, &audioReports, &clock)
			continue
		}
		au := f.Video
		live := !(f.CatchUp || catchingUp)
		pkts = st.StampAt(pkts, au, pts, !live)
		sess.history.record(au, pkts)
		// A write error means the transport is going away; it ends the
		// session itself, so just count what went out of this AU.
		k, _ := sess.tr.writeVideo(pkts)
		sent, n := uint64(k), uint64(0)
		for i := range pkts[:k] {
			n += uint64(rtph264.HeaderLen + len(pkts[i].Payload))
		}
		if live && sent == uint64(len(pkts)) {
			s.latency.observeSent(au)
		}
		sess.packets.Add(sent)
		sess.bytes.Add(n)
		sess.reader.CountSent(int(sent), int(n))
		videoReports.sent(sent, n-sent*rtph264.HeaderLen)
		if len(pkts) > 0 {
			videoLive = live
		}
		if sent > 0 && videoLive && clock.set {
			videoReports.maybeSend(sess.tr, time.Now(), st.LastTimestamp(), clock.at(pts))
		}
		// Behind the live edge (catch-up, or frames queued during a stall),
		// space frames out instead of bursting a whole queue at line rate:
		// a burst of hundreds of packets overflows socket and router
		// buffers, and the viewer would lose the very frames it waits for.
		if f.CatchUp || catchingUp || backlog > 1 {
			pace.Reset(catchUpInterval)
			select {
			case <-pace.C:
			case <-sess.ctx.Done():
				return context.Cause(sess.ctx)
			}
		}
	}
}

func framePTS(f hub.Frame) int64 {
	if f.Video != nil {
		return f.Video.PTS
	}
	return f.Audio.PTS
}
