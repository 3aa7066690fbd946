package whep

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
	"github.com/srtwhep/srtwhep/pkg/sockbuf"
)

// pionPlane gives every viewer a pion PeerConnection on the shared ICE
// muxes (api.go).
type pionPlane struct {
	cfg Config
	m   *muxes
	api *apis
}

func listenPion(cfg Config, s *Server) (plane, error) {
	m, err := listenMuxes(cfg, s.log)
	if err != nil {
		return nil, err
	}
	api, err := newAPIs(cfg, m, s.log)
	if err != nil {
		m.close()
		return nil, err
	}
	return &pionPlane{cfg: cfg, m: m, api: api}, nil
}

func (p *pionPlane) udpAddr() *net.UDPAddr    { return p.m.udpAddr }
func (p *pionPlane) tcpAddr() string          { return p.m.tcpAddrString() }
func (p *pionPlane) udpDrops() *sockbuf.Drops { return p.m.udpDrops }
func (p *pionPlane) close()                   { p.m.close() }

func (p *pionPlane) udpCounts() (datagrams, refused uint64) {
	if p.m.udpBatch == nil {
		return 0, 0
	}
	bs := p.m.udpBatch.Stats()
	return bs.Datagrams, bs.Errors
}

// pionTransport is a viewer's PeerConnection with its tracks.
type pionTransport struct {
	sess   *session
	pc     *webrtc.PeerConnection
	track  *webrtc.TrackLocalStaticRTP
	sender *webrtc.RTPSender
	// audioTrack and audioSender are nil when the session has no audio
	// (a video-only offer, or a path without audio at the join).
	audioTrack  *webrtc.TrackLocalStaticRTP
	audioSender *webrtc.RTPSender
	// ufrag is pion's ICE ufrag in the answer (answeredUfrag).
	ufrag string

	conn          chan struct{}
	connectedOnce sync.Once
	st            atomic.Int32 // webrtc.PeerConnectionState
	// timeout bounds gathering for an ICE restart's answer.
	timeout time.Duration

	// rtcp are the goroutines that read the senders' RTCP: pion's buffers
	// must be drained, and the video sender's RTCP is the session's.
	rtcp sync.WaitGroup
}

// answer builds the PeerConnection for sess's offer and returns its
// complete answer (all candidates: we do not trickle).
func (p *pionPlane) answer(ctx context.Context, sess *session, audio bool) (transport, string, error) {
	o := sess.offer
	pc, err := p.api.pick(audio).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return nil, "", fmt.Errorf("create peer connection: %w", err)
	}
	t := &pionTransport{sess: sess, pc: pc, conn: make(chan struct{}), timeout: p.cfg.HandshakeTimeout}
	t.st.Store(int32(webrtc.PeerConnectionStateNew))
	ok := false
	defer func() {
		if !ok {
			_ = pc.GracefulClose()
		}
	}()

	codec := webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeH264, ClockRate: 90000, SDPFmtpLine: o.fmtp()}
	t.track, err = webrtc.NewTrackLocalStaticRTP(codec, "video", "srtwhep")
	if err != nil {
		return nil, "", fmt.Errorf("create track: %w", err)
	}
	tr, err := pc.AddTransceiverFromTrack(t.track, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly})
	if err != nil {
		return nil, "", fmt.Errorf("add track: %w", err)
	}
	t.sender = tr.Sender()
	var audioTr *webrtc.RTPTransceiver
	if audio {
		// The same stream id as the video: browsers synchronise only the
		// tracks of one MediaStream.
		t.audioTrack, err = webrtc.NewTrackLocalStaticRTP(opusCodec, "audio", "srtwhep")
		if err != nil {
			return nil, "", fmt.Errorf("create audio track: %w", err)
		}
		audioTr, err = pc.AddTransceiverFromTrack(t.audioTrack, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly})
		if err != nil {
			return nil, "", fmt.Errorf("add audio track: %w", err)
		}
		t.audioSender = audioTr.Sender()
	}

	// pion runs these callbacks on goroutines it does not wait for, so
	// they only record and signal.
	pc.OnConnectionStateChange(func(st webrtc.PeerConnectionState) {
		t.st.Store(int32(st))
		switch st {
		case webrtc.PeerConnectionStateConnected:
			t.connectedOnce.Do(func() { close(t.conn) })
		case webrtc.PeerConnectionStateFailed:
			sess.cancel(errICEFailed)
		case webrtc.PeerConnectionStateClosed:
			sess.cancel(errPCClosed)
		}
	})

	// The answer's ufrag is the ICE transport's, which every BUNDLEd
	// section shares; CreateAnswer reads the same. It is read before the
	// offer is applied: that starts the transport on pion's operations
	// goroutine, which sets the field this reads without a lock.
	params, err := t.sender.Transport().ICETransport().GetLocalParameters()
	if err != nil {
		return nil, "", fmt.Errorf("read our ICE credentials: %w", err)
	}
	t.ufrag = params.UsernameFragment
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: sess.offerSDP}); err != nil {
		return nil, "", sdpoffer.Errorf("offer rejected by the WebRTC stack: %v", err)
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
		return nil, "", fmt.Errorf("set codec preferences: %w", err)
	}
	if audioTr != nil {
		err = audioTr.SetCodecPreferences([]webrtc.RTPCodecParameters{{RTPCodecCapability: opusCodec, PayloadType: webrtc.PayloadType(o.audioPT)}})
		if err != nil {
			return nil, "", fmt.Errorf("set audio codec preferences: %w", err)
		}
	}
	answer, err := negotiate(ctx, pc, p.cfg.HandshakeTimeout)
	if err != nil {
		return nil, "", err
	}
	ok = true
	t.readRTCP()
	return t, answer, nil
}

// readRTCP starts the RTCP readers; they end when the PeerConnection
// closes, and close waits for them.
func (t *pionTransport) readRTCP() {
	t.rtcp.Go(func() {
		for {
			pkts, _, err := t.sender.ReadRTCP()
			if err != nil {
				return
			}
			t.sess.onRTCP(pkts)
		}
	})
	if t.audioSender != nil {
		t.rtcp.Go(func() {
			for {
				if _, _, err := t.audioSender.ReadRTCP(); err != nil {
					return
				}
			}
		})
	}
}

// negotiate answers the applied remote offer and waits for gathering to
// complete, so the answer carries every candidate.
func negotiate(ctx context.Context, pc *webrtc.PeerConnection, timeout time.Duration) (string, error) {
	answer, err := pc.CreateAnswer(nil)
	if err != nil {
		return "", sdpoffer.Errorf("cannot answer the offer: %v", err)
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

func senderSSRC(s *webrtc.RTPSender) uint32 {
	if s == nil {
		return 0
	}
	if enc := s.GetParameters().Encodings; len(enc) > 0 {
		return uint32(enc[0].SSRC)
	}
	return 0
}

func (t *pionTransport) ssrcs() (video, audio uint32) {
	return senderSSRC(t.sender), senderSSRC(t.audioSender)
}

func (t *pionTransport) answeredUfrag() string { return t.ufrag }

func (t *pionTransport) connected() <-chan struct{} { return t.conn }

func (t *pionTransport) state() string {
	return webrtc.PeerConnectionState(t.st.Load()).String()
}

// iceStarted reports whether the viewer has taken part in ICE: it sent us a
// connectivity check (pion counts only checks that pass the message
// integrity of the offer's credentials) or answered one of ours. pion's
// ICE state is no help here: the agent goes "checking" on its own as soon
// as the offer is applied.
func (t *pionTransport) iceStarted() bool {
	if t.pc.ConnectionState() == webrtc.PeerConnectionStateConnected {
		return true
	}
	for _, st := range t.pc.GetStats() {
		if cp, ok := st.(webrtc.ICECandidatePairStats); ok && (cp.RequestsReceived > 0 || cp.ResponsesReceived > 0) {
			return true
		}
	}
	return false
}

func (t *pionTransport) writeVideo(pkts []rtp.Packet) (int, error) {
	for i := range pkts {
		if err := t.track.WriteRTP(&pkts[i]); err != nil {
			return i, err
		}
	}
	return len(pkts), nil
}

func (t *pionTransport) writeAudio(pkt *rtp.Packet) error {
	if t.audioTrack == nil {
		return errors.New("no audio track")
	}
	return t.audioTrack.WriteRTP(pkt)
}

func (t *pionTransport) writeRTCP(pkts []rtcp.Packet) error { return t.pc.WriteRTCP(pkts) }

func (t *pionTransport) trickle(cands []string) error { return addCandidates(t.pc, cands) }

func addCandidates(pc *webrtc.PeerConnection, cands []string) error {
	for i, c := range cands {
		if err := pc.AddICECandidate(webrtc.ICECandidateInit{Candidate: c}); err != nil {
			return fmt.Errorf("candidate %d %q: %v", i+1, c, err)
		}
	}
	return nil
}

// restartICE re-applies the viewer's offer with its new credentials, which
// pion treats as an ICE restart (new local ufrag/pwd, gathering again; the
// DTLS and SRTP state survive), and answers it.
func (t *pionTransport) restartICE(ctx context.Context, offerSDP string, frag sdpFrag) (localICE, error) {
	err := t.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offerSDP})
	if err != nil {
		return localICE{}, fmt.Errorf("apply the restarted offer: %w", err)
	}
	answer, err := negotiate(ctx, t.pc, t.timeout)
	if err != nil {
		return localICE{}, err
	}
	li, err := localICEFrom(answer)
	if err != nil {
		return localICE{}, err
	}
	if err := addCandidates(t.pc, frag.candidates); err != nil {
		return localICE{}, sdpoffer.Errorf("%v", err)
	}
	return li, nil
}

// close says goodbye to a connected viewer and closes the PeerConnection
// (with its DTLS close_notify), then waits for the RTCP readers, which
// end with it.
func (t *pionTransport) close() {
	t.sayGoodbye()
	_ = t.pc.GracefulClose()
	t.rtcp.Wait()
}
