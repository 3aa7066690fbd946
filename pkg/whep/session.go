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
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/hub"
	"github.com/srtwhep/srtwhep/pkg/rtph264"
)

// session is one viewer: its PeerConnection, its tracks and its reader.
type session struct {
	id, path, remote string
	since            time.Time
	log              *slog.Logger
	reader           Reader

	// clientKey is whose handshake slot the session holds until it is
	// connected (see awaitConnected).
	clientKey string

	pc     *webrtc.PeerConnection
	track  *webrtc.TrackLocalStaticRTP
	sender *webrtc.RTPSender
	// audioTrack and audioSender are nil when the session has no audio
	// (a video-only offer, or a path without audio at the join).
	audioTrack  *webrtc.TrackLocalStaticRTP
	audioSender *webrtc.RTPSender
	// history answers NACKs from the shared payloads (see retransmit.go).
	history    history
	retransmit atomic.Uint64

	ctx    context.Context
	cancel context.CancelCauseFunc

	connected     chan struct{}
	connectedOnce sync.Once
	state         atomic.Int32 // webrtc.PeerConnectionState

	// sigMu serialises signalling (PATCH) on pc and guards the fields below.
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
		State:       webrtc.PeerConnectionState(sess.state.Load()).String(),
		Since:       sess.since,
		PacketsSent: sess.packets.Load(),
		BytesSent:   sess.bytes.Load(),
	}
	if d, ok := sess.reader.(droppedCounter); ok {
		si.Dropped = d.Dropped()
	}
	return si
}

// newSession builds the PeerConnection for an offer and returns the session
// with its complete answer (all candidates: we do not trickle). On error
// nothing is left open; a *badOffer error means the viewer's offer is at
// fault.
//
// The session's context derives from base (the server's run context), while
// ctx only bounds building the answer (the HTTP request). audio answers the
// offer's audio section with Opus; api must then know Opus.
func newSession(ctx, base context.Context, api *webrtc.API, o offer, offerSDP string, timeout time.Duration, audio bool) (*session, error) {
	sess := &session{offer: o, offerSDP: offerSDP, connected: make(chan struct{})}
	sess.ctx, sess.cancel = context.WithCancelCause(base)
	pc, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		sess.cancel(err)
		return nil, fmt.Errorf("create peer connection: %w", err)
	}
	sess.pc = pc
	sess.state.Store(int32(webrtc.PeerConnectionStateNew))
	ok := false
	defer func() {
		if !ok {
			sess.cancel(errors.New("answer failed"))
			_ = pc.GracefulClose()
		}
	}()

	codec := webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeH264, ClockRate: 90000, SDPFmtpLine: o.fmtp()}
	sess.track, err = webrtc.NewTrackLocalStaticRTP(codec, "video", "srtwhep")
	if err != nil {
		return nil, fmt.Errorf("create track: %w", err)
	}
	tr, err := pc.AddTransceiverFromTrack(sess.track, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly})
	if err != nil {
		return nil, fmt.Errorf("add track: %w", err)
	}
	sess.sender = tr.Sender()
	var audioTr *webrtc.RTPTransceiver
	if audio {
		// The same stream id as the video: browsers synchronise only the
		// tracks of one MediaStream.
		sess.audioTrack, err = webrtc.NewTrackLocalStaticRTP(opusCodec, "audio", "srtwhep")
		if err != nil {
			return nil, fmt.Errorf("create audio track: %w", err)
		}
		audioTr, err = pc.AddTransceiverFromTrack(sess.audioTrack, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly})
		if err != nil {
			return nil, fmt.Errorf("add audio track: %w", err)
		}
		sess.audioSender = audioTr.Sender()
	}

	// pion runs these callbacks on goroutines it does not wait for, so
	// they only record and signal.
	pc.OnConnectionStateChange(func(st webrtc.PeerConnectionState) {
		sess.state.Store(int32(st))
		switch st {
		case webrtc.PeerConnectionStateConnected:
			sess.connectedOnce.Do(func() { close(sess.connected) })
		case webrtc.PeerConnectionStateFailed:
			sess.cancel(errICEFailed)
		case webrtc.PeerConnectionStateClosed:
			sess.cancel(errPCClosed)
		}
	})

	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offerSDP}); err != nil {
		return nil, badOfferf("offer rejected by the WebRTC stack: %v", err)
	}
	// Answer with exactly one codec: the H.264 profile picked from the
	// offer, under the viewer's payload type.
	err = tr.SetCodecPreferences([]webrtc.RTPCodecParameters{{
		RTPCodecCapability: webrtc.RTPCodecCapability{
			MimeType: webrtc.MimeTypeH264, ClockRate: 90000, SDPFmtpLine: o.fmtp(),
			RTCPFeedback: []webrtc.RTCPFeedback{{Type: "nack"}, {Type: "nack", Parameter: "pli"}, {Type: "ccm", Parameter: "fir"}},
		},
		PayloadType: webrtc.PayloadType(o.payloadType),
	}})
	if err != nil {
		return nil, fmt.Errorf("set codec preferences: %w", err)
	}
	if audioTr != nil {
		err = audioTr.SetCodecPreferences([]webrtc.RTPCodecParameters{{RTPCodecCapability: opusCodec, PayloadType: webrtc.PayloadType(o.audioPT)}})
		if err != nil {
			return nil, fmt.Errorf("set audio codec preferences: %w", err)
		}
	}
	answer, err := negotiate(ctx, pc, timeout)
	if err != nil {
		return nil, err
	}
	li, err := localICEFrom(answer)
	if err != nil {
		return nil, err
	}
	sess.answeredSDP = answer
	sess.etag = quoteETag(li.ufrag)
	ok = true
	return sess, nil
}

// negotiate answers the applied remote offer and waits for gathering to
// complete, so the answer carries every candidate.
func negotiate(ctx context.Context, pc *webrtc.PeerConnection, timeout time.Duration) (string, error) {
	answer, err := pc.CreateAnswer(nil)
	if err != nil {
		return "", badOfferf("cannot answer the offer: %v", err)
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(answer); err != nil {
		return "", fmt.Errorf("set local description: %w", err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-gathered:
	case <-t.C:
		return "", fmt.Errorf("ICE gathering did not complete within %v", timeout)
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
	return pc.LocalDescription().SDP, nil
}

func quoteETag(ufrag string) string { return `"` + ufrag + `"` }

// runSession is the session's goroutine, counted in s.wg by addSession. It
// owns the handshake slot taken at POST, the PeerConnection and the reader.
func (s *Server) runSession(sess *session) {
	defer s.wg.Done()

	// RTCP is read so pion's buffers never fill, and this is where NACKs
	// are answered from the viewer's shared-payload history. pion hands a
	// compound RTCP packet to every sender it names, so a NACK is answered
	// only for the video SSRC it is about.
	var rtcpWG sync.WaitGroup
	rtcpWG.Go(func() {
		var videoSSRC uint32
		if enc := sess.sender.GetParameters().Encodings; len(enc) > 0 {
			videoSSRC = uint32(enc[0].SSRC)
		}
		for {
			pkts, _, err := sess.sender.ReadRTCP()
			if err != nil {
				return
			}
			for _, p := range pkts {
				if n, ok := p.(*rtcp.TransportLayerNack); ok && n.MediaSSRC == videoSSRC {
					sess.retransmit.Add(uint64(sess.resend(n)))
				}
			}
		}
	})
	if sess.audioSender != nil {
		rtcpWG.Go(func() {
			for {
				if _, _, err := sess.audioSender.ReadRTCP(); err != nil {
					return
				}
			}
		})
	}

	reason := s.serve(sess)

	sess.cancel(reason)
	reason = context.Cause(sess.ctx)
	sess.sayGoodbye()
	_ = sess.pc.GracefulClose()
	rtcpWG.Wait()
	sess.reader.Close()
	if cur := s.lookupSession(sess.id); cur == sess {
		s.removeSession(sess.id)
	}
	packets := sess.packets.Load()
	s.stats.closedPackets.Add(packets)
	s.stats.closedBytes.Add(sess.bytes.Load())
	sess.log.Info("viewer closed", "reason", reason.Error(),
		"duration", time.Since(sess.since).Round(time.Millisecond).String(), "packets", packets)
}

// serve waits for the connection, then writes access units until the
// session ends, and returns why it ended.
func (s *Server) serve(sess *session) error {
	if err := s.awaitConnected(sess); err != nil {
		return err
	}

	// Attach only now, so a viewer still in ICE never fills a queue.
	if sess.audioTrack != nil {
		sess.reader.AttachAV()
	} else {
		sess.reader.Attach()
	}
	sess.sigMu.Lock()
	pt, audioPT := sess.offer.payloadType, sess.offer.audioPT
	sess.sigMu.Unlock()
	st := rtph264.NewStamper(mrand.Uint32(), pt, uint16(mrand.Uint32()), mrand.Uint32())
	st.SetCatchUpStep(uint32(catchUpInterval * av.ClockRate / time.Second))
	audio := opusStamper{ssrc: mrand.Uint32(), pt: audioPT, seq: uint16(mrand.Uint32()), offset: mrand.Uint32()}
	var pkts []rtp.Packet
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
	videoReports := senderReporter{sender: sess.sender}
	audioReports := senderReporter{sender: sess.audioSender}
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
		f, err := sess.reader.RecvFrame(sess.ctx)
		switch {
		case err == nil:
		case sess.ctx.Err() != nil:
			return context.Cause(sess.ctx)
		case errors.Is(err, hub.ErrEnded):
			return errPublisherGone
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
		var sent, n uint64
		for i := range pkts {
			// A write error means the transport is going away; the
			// state callback ends the session, so just stop this AU.
			if err := sess.track.WriteRTP(&pkts[i]); err != nil {
				break
			}
			sent++
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
			videoReports.maybeSend(sess.pc, time.Now(), st.LastTimestamp(), clock.at(pts))
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
