// Package pionplane is the media plane that gives every viewer a pion
// PeerConnection on shared ICE muxes: one UDP socket (written through
// BatchConn's sendmmsg) and an optional ICE-TCP listener. It keeps two
// pion APIs: one that knows Opus, for sessions with audio, and one that
// does not. It is the only server package that imports pion/webrtc.
package pionplane

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

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

// Plane gives every viewer a pion PeerConnection on the shared ICE muxes
// (api.go). New checks its config, Start binds, Close ends.
type Plane struct {
	cfg plane.Config
	m   *muxes
	api *apis
	// tcpLimit is made in New, not Start, so that a scrape may read its
	// counts at any time without racing Start.
	tcpLimit *plane.TCPLimit
}

// New checks cfg and starts nothing.
func New(cfg plane.Config) (*Plane, error) {
	if err := cfg.Check(); err != nil {
		return nil, fmt.Errorf("whep: %w", err)
	}
	cfg = cfg.WithDefaults()
	return &Plane{cfg: cfg, tcpLimit: plane.NewTCPLimit(cfg.MaxTCPPerClient, plane.MaxTCPConns, cfg.Logger)}, nil
}

// Start binds the muxes and builds the pion APIs.
func (p *Plane) Start() error {
	m, err := listenMuxes(p.cfg, p.tcpLimit, p.cfg.Logger)
	if err != nil {
		return err
	}
	api, err := newAPIs(p.cfg, m, p.cfg.Logger)
	if err != nil {
		m.close()
		return err
	}
	p.m, p.api = m, api
	return nil
}

// UDPAddr is the shared UDP socket's address.
func (p *Plane) UDPAddr() *net.UDPAddr { return p.m.udpAddr }

// TCPAddr is the ICE-TCP listener's address, "" without one.
func (p *Plane) TCPAddr() string { return p.m.tcpAddrString() }

// Close ends the muxes once every PeerConnection is closed.
func (p *Plane) Close() { p.m.close() }

// SocketStats are the media datagrams handed to the kernel, those it
// refused, and its receive drops.
func (p *Plane) SocketStats() (datagrams, refused, receiveDrops uint64) {
	if p.m.udpBatch != nil {
		bs := p.m.udpBatch.Stats()
		datagrams, refused = bs.Datagrams, bs.Errors
	}
	return datagrams, refused, p.m.udpDrops.Count0()
}

// TCPRefused is how many ICE-TCP connections were reset at accept so
// far, over webrtc.maxTCPPerClient and over plane.MaxTCPConns; zero
// before Start and without an ICE-TCP listener.
func (p *Plane) TCPRefused() (perClient, global uint64) { return p.tcpLimit.Refused() }

// conn is a viewer's PeerConnection with its tracks, as a plane.Conn.
type conn struct {
	offer  plane.Offer
	pc     *webrtc.PeerConnection
	track  *webrtc.TrackLocalStaticRTP
	sender *webrtc.RTPSender
	// audioTrack and audioSender are nil when the session has no audio
	// (a video-only offer, or a path without audio at the join).
	audioTrack  *webrtc.TrackLocalStaticRTP
	audioSender *webrtc.RTPSender

	conn          chan struct{}
	connectedOnce sync.Once
	st            atomic.Int32 // webrtc.PeerConnectionState
	// timeout bounds gathering for an ICE restart's answer.
	timeout time.Duration

	// rtcp are the goroutines that read the senders' RTCP: pion's buffers
	// must be drained, and the video sender's RTCP is the session's.
	rtcp sync.WaitGroup
	// sending is the goroutine that runs the session's sender: pion's
	// track writes block.
	sending sync.WaitGroup
}

// Answer builds the PeerConnection for o and returns it with its complete
// answer (all candidates: we do not trickle).
func (p *Plane) Answer(ctx context.Context, o plane.Offer) (plane.Conn, plane.Answer, error) {
	c, a, err := p.answer(ctx, o)
	if err != nil {
		return nil, plane.Answer{}, err
	}
	return c, a, nil
}

func (p *Plane) answer(ctx context.Context, o plane.Offer) (*conn, plane.Answer, error) {
	audio := o.Audio != nil
	pc, err := p.api.pick(audio).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return nil, plane.Answer{}, fmt.Errorf("create peer connection: %w", err)
	}
	t := &conn{offer: o, pc: pc, conn: make(chan struct{}), timeout: p.cfg.HandshakeTimeout}
	t.st.Store(int32(webrtc.PeerConnectionStateNew))
	ok := false
	defer func() {
		if !ok {
			_ = pc.GracefulClose()
		}
	}()

	codec := webrtc.RTPCodecCapability{MimeType: videoMime(o.Video.Video), ClockRate: 90000, SDPFmtpLine: o.Video.Fmtp}
	t.track, err = webrtc.NewTrackLocalStaticRTP(codec, "video", "srtwhep")
	if err != nil {
		return nil, plane.Answer{}, fmt.Errorf("create track: %w", err)
	}
	tr, err := pc.AddTransceiverFromTrack(t.track, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly})
	if err != nil {
		return nil, plane.Answer{}, fmt.Errorf("add track: %w", err)
	}
	t.sender = tr.Sender()
	var audioTr *webrtc.RTPTransceiver
	if audio {
		// The same stream id as the video: browsers synchronise only the
		// tracks of one MediaStream.
		t.audioTrack, err = webrtc.NewTrackLocalStaticRTP(opusCodec, "audio", "srtwhep")
		if err != nil {
			return nil, plane.Answer{}, fmt.Errorf("create audio track: %w", err)
		}
		audioTr, err = pc.AddTransceiverFromTrack(t.audioTrack, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly})
		if err != nil {
			return nil, plane.Answer{}, fmt.Errorf("add audio track: %w", err)
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
			o.OnDone(plane.ErrICEFailed)
		case webrtc.PeerConnectionStateClosed:
			o.OnDone(plane.ErrPeerClosed)
		}
	})

	// pion tells of no single check, and its ICE state goes "checking" on
	// its own once the offer is applied; ICE connected is the first sign
	// of a viewer that takes part, and DTLS starts right after it.
	if o.OnICEStart != nil {
		var once sync.Once
		pc.OnICEConnectionStateChange(func(st webrtc.ICEConnectionState) {
			if st == webrtc.ICEConnectionStateConnected {
				once.Do(o.OnICEStart)
			}
		})
	}

	// The answer's ufrag is the ICE transport's, which every BUNDLEd
	// section shares; CreateAnswer reads the same. It is read before the
	// offer is applied: that starts the transport on pion's operations
	// goroutine, which sets the field this reads without a lock.
	params, err := t.sender.Transport().ICETransport().GetLocalParameters()
	if err != nil {
		return nil, plane.Answer{}, fmt.Errorf("read our ICE credentials: %w", err)
	}
	offer, err := pionOffer(o.SDP)
	if err != nil {
		return nil, plane.Answer{}, err
	}
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer}); err != nil {
		return nil, plane.Answer{}, sdpoffer.Errorf("offer rejected by the WebRTC stack: %v", err)
	}
	// Answer with exactly one codec: the H.264 profile (or H.265 format)
	// picked from the offer, under the viewer's payload type.
	err = tr.SetCodecPreferences([]webrtc.RTPCodecParameters{{
		RTPCodecCapability: webrtc.RTPCodecCapability{
			MimeType: videoMime(o.Video.Video), ClockRate: 90000, SDPFmtpLine: o.Video.Fmtp,
			RTCPFeedback: []webrtc.RTCPFeedback{{Type: "nack"}, {Type: "nack", Parameter: "pli"}, {Type: "ccm", Parameter: "fir"}},
		},
		PayloadType: webrtc.PayloadType(o.Video.PayloadType),
	}})
	if err != nil {
		return nil, plane.Answer{}, fmt.Errorf("set codec preferences: %w", err)
	}
	if audioTr != nil {
		err = audioTr.SetCodecPreferences([]webrtc.RTPCodecParameters{{RTPCodecCapability: opusCodec, PayloadType: webrtc.PayloadType(o.Audio.PayloadType)}})
		if err != nil {
			return nil, plane.Answer{}, fmt.Errorf("set audio codec preferences: %w", err)
		}
	}
	answer, err := negotiate(ctx, pc, p.cfg.HandshakeTimeout)
	if err != nil {
		return nil, plane.Answer{}, err
	}
	if answer, err = withRejectedMids(answer, o.SDP); err != nil {
		return nil, plane.Answer{}, err
	}
	ok = true
	t.readRTCP()
	return t, plane.Answer{SDP: answer, Ufrag: params.UsernameFragment}, nil
}

// readRTCP starts the RTCP readers; they end when the PeerConnection
// closes, and close waits for them.
func (t *conn) readRTCP() {
	t.rtcp.Go(func() {
		for {
			pkts, _, err := t.sender.ReadRTCP()
			if err != nil {
				return
			}
			t.offer.OnRTCP(pkts)
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

func (t *conn) SSRCs() (video, audio uint32) {
	return senderSSRC(t.sender), senderSSRC(t.audioSender)
}

func (t *conn) Connected() <-chan struct{} { return t.conn }

func (t *conn) State() string {
	return webrtc.PeerConnectionState(t.st.Load()).String()
}

// ICEStarted reports whether the viewer has taken part in ICE: it sent us a
// connectivity check (pion counts only checks that pass the message
// integrity of the offer's credentials) or answered one of ours. pion's
// ICE state is no help here: the agent goes "checking" on its own as soon
// as the offer is applied.
func (t *conn) ICEStarted() bool {
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

func (t *conn) WriteVideo(pkts []rtp.Packet) (int, error) {
	for i := range pkts {
		if err := t.track.WriteRTP(&pkts[i]); err != nil {
			return i, err
		}
	}
	return len(pkts), nil
}

func (t *conn) WriteAudio(pkt *rtp.Packet) error {
	if t.audioTrack == nil {
		return errors.New("no audio track")
	}
	return t.audioTrack.WriteRTP(pkt)
}

func (t *conn) WriteRTCP(pkts []rtcp.Packet) error { return t.pc.WriteRTCP(pkts) }

func (t *conn) Trickle(cands []string) error { return addCandidates(t.pc, cands) }

func addCandidates(pc *webrtc.PeerConnection, cands []string) error {
	for i, c := range cands {
		if err := pc.AddICECandidate(webrtc.ICECandidateInit{Candidate: c}); err != nil {
			return fmt.Errorf("candidate %d %q: %v", i+1, c, err)
		}
	}
	return nil
}

// RestartICE re-applies the viewer's offer with its new credentials, which
// pion treats as an ICE restart (new local ufrag/pwd, gathering again; the
// DTLS and SRTP state survive), and answers it.
func (t *conn) RestartICE(ctx context.Context, offerSDP string, remote plane.ICE) (plane.ICE, error) {
	// Rewritten as the first offer was, or pion would now take the
	// sendrecv or the data channel it was not given then.
	offer, err := pionOffer(offerSDP)
	if err != nil {
		return plane.ICE{}, err
	}
	err = t.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer})
	if err != nil {
		return plane.ICE{}, fmt.Errorf("apply the restarted offer: %w", err)
	}
	answer, err := negotiate(ctx, t.pc, t.timeout)
	if err != nil {
		return plane.ICE{}, err
	}
	li, err := plane.ICEFromSDP(answer)
	if err != nil {
		return plane.ICE{}, err
	}
	if err := addCandidates(t.pc, remote.Candidates); err != nil {
		return plane.ICE{}, sdpoffer.Errorf("%v", err)
	}
	return li, nil
}

// Drive runs the session's sender on a goroutine of the connection's:
// pion's track writes block. Close waits for it.
func (t *conn) Drive(s plane.Stepper) {
	t.sending.Go(func() { plane.Run(s) })
}

// Close says goodbye to a connected viewer and closes the PeerConnection
// (with its DTLS close_notify), then waits for the RTCP readers, which
// end with it.
func (t *conn) Close() {
	t.sayGoodbye()
	_ = t.pc.GracefulClose()
	t.rtcp.Wait()
	t.sending.Wait()
}

// videoMime is pion's name for the video codec sent.
func videoMime(c av.Codec) string {
	if c == av.CodecH265 {
		return webrtc.MimeTypeH265
	}
	return webrtc.MimeTypeH264
}
