package whepclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/interceptor/pkg/nack"
	"github.com/pion/interceptor/pkg/report"
	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"
	"github.com/srtwhep/srtwhep/pkg/pionslog"
)

func newPeerConnection(opt Options, log *slog.Logger) (*webrtc.PeerConnection, error) {
	var feedback []webrtc.RTCPFeedback
	// PLI is always offered so a server may answer our (rare) keyframe
	// requests; generic NACK only when we actually generate NACKs, because a
	// server that sees it keeps a retransmission buffer for us.
	feedback = append(feedback, webrtc.RTCPFeedback{Type: "nack", Parameter: "pli"})
	if opt.NACK {
		feedback = append(feedback, webrtc.RTCPFeedback{Type: "nack"})
	}

	me := &webrtc.MediaEngine{}
	if opt.Audio {
		err := me.RegisterCodec(webrtc.RTPCodecParameters{
			RTPCodecCapability: webrtc.RTPCodecCapability{
				MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2,
				SDPFmtpLine: "minptime=10;useinbandfec=1;stereo=1",
			},
			PayloadType: 111,
		}, webrtc.RTPCodecTypeAudio)
		if err != nil {
			return nil, fmt.Errorf("whepclient: register Opus codec: %w", err)
		}
	}
	for _, c := range []struct {
		pt      webrtc.PayloadType
		profile string
	}{{102, "42e01f"}, {104, "42001f"}} {
		err := me.RegisterCodec(webrtc.RTPCodecParameters{
			RTPCodecCapability: webrtc.RTPCodecCapability{
				MimeType:     webrtc.MimeTypeH264,
				ClockRate:    90000,
				SDPFmtpLine:  "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=" + c.profile,
				RTCPFeedback: feedback,
			},
			PayloadType: c.pt,
		}, webrtc.RTPCodecTypeVideo)
		if err != nil {
			return nil, fmt.Errorf("whepclient: register H.264 codec: %w", err)
		}
	}

	if opt.H265 {
		err := me.RegisterCodec(webrtc.RTPCodecParameters{
			RTPCodecCapability: webrtc.RTPCodecCapability{
				MimeType: webrtc.MimeTypeH265, ClockRate: 90000,
				// What Safari offers: Main profile, level 3.1.
				SDPFmtpLine:  "level-id=93;profile-id=1;tier-flag=0;tx-mode=SRST",
				RTCPFeedback: feedback,
			},
			PayloadType: 49,
		}, webrtc.RTPCodecTypeVideo)
		if err != nil {
			return nil, fmt.Errorf("whepclient: register H.265 codec: %w", err)
		}
	}

	reg := &interceptor.Registry{}
	if opt.NACK {
		gen, err := nack.NewGeneratorInterceptor()
		if err != nil {
			return nil, fmt.Errorf("whepclient: NACK generator: %w", err)
		}
		reg.Add(gen)
	}
	if opt.ReceiverReports {
		rr, err := report.NewReceiverInterceptor()
		if err != nil {
			return nil, fmt.Errorf("whepclient: receiver reports: %w", err)
		}
		reg.Add(rr)
	}
	if opt.TransportCC {
		if err := webrtc.ConfigureTWCCSender(me, reg); err != nil {
			return nil, fmt.Errorf("whepclient: transport-cc feedback: %w", err)
		}
	}

	se := webrtc.SettingEngine{}
	// mDNS would open a multicast socket per session; WHEP servers send
	// plain IP candidates, so nothing is lost by turning it off.
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.LoggerFactory = pionslog.Factory{Log: log}
	if opt.SettingEngine != nil {
		opt.SettingEngine(&se)
	}

	api := webrtc.NewAPI(webrtc.WithMediaEngine(me), webrtc.WithInterceptorRegistry(reg), webrtc.WithSettingEngine(se))
	var cfg webrtc.Configuration
	if opt.BundleOnly {
		cfg.BundlePolicy = webrtc.BundlePolicyMaxBundle
	}
	pc, err := api.NewPeerConnection(cfg)
	if err != nil {
		return nil, fmt.Errorf("whepclient: new peer connection: %w", err)
	}
	kinds := []webrtc.RTPCodecType{webrtc.RTPCodecTypeVideo}
	if opt.Audio && opt.AudioFirst {
		kinds = []webrtc.RTPCodecType{webrtc.RTPCodecTypeAudio, webrtc.RTPCodecTypeVideo}
	} else if opt.Audio {
		kinds = append(kinds, webrtc.RTPCodecTypeAudio)
	}
	for _, k := range kinds {
		_, err = pc.AddTransceiverFromKind(k, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionRecvonly})
		if err != nil {
			_ = pc.Close()
			return nil, fmt.Errorf("whepclient: add recvonly %s transceiver: %w", k, err)
		}
	}
	return pc, nil
}

// bundleOnly rewrites offer as RFC 8843 §7.2 has a max-bundle offerer
// write it: the sections of the BUNDLE group after the first (the
// offerer-tagged one) get port 0 and a=bundle-only, and lose their
// candidates, which only the tagged section carries.
func bundleOnly(offer string) (string, error) {
	var sd sdp.SessionDescription
	if err := sd.UnmarshalString(offer); err != nil {
		return "", err
	}
	for _, md := range sd.MediaDescriptions[min(1, len(sd.MediaDescriptions)):] {
		md.MediaName.Port = sdp.RangedPort{Value: 0}
		kept := []sdp.Attribute{{Key: "bundle-only"}}
		for _, a := range md.Attributes {
			if a.Key != "candidate" && a.Key != "end-of-candidates" {
				kept = append(kept, a)
			}
		}
		md.Attributes = kept
	}
	b, err := sd.Marshal()
	return string(b), err
}

// negotiate does the non-trickle offer/answer over HTTP.
func (s *Session) negotiate(ctx context.Context, endpoint *url.URL) error {
	offer, err := s.pc.CreateOffer(nil)
	if err != nil {
		return fmt.Errorf("whepclient: create offer: %w", err)
	}
	gathered := webrtc.GatheringCompletePromise(s.pc)
	if err := s.pc.SetLocalDescription(offer); err != nil {
		return fmt.Errorf("whepclient: set local description: %w", err)
	}
	select {
	case <-gathered:
	case <-ctx.Done():
		return fmt.Errorf("whepclient: ICE gathering did not complete: %w", ctx.Err())
	}

	body := s.pc.LocalDescription().SDP
	if s.opt.BundleOnly {
		if body, err = bundleOnly(body); err != nil {
			return fmt.Errorf("whepclient: rewrite the offer bundle-only: %w", err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint.String(), strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("whepclient: build POST: %w", err)
	}
	req.Header.Set("Content-Type", "application/sdp")
	req.Header.Set("Accept", "application/sdp")
	s.authorize(req)

	resp, err := s.httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("whepclient: POST offer to %s: %w", endpoint.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return readHTTPError(resp)
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerSize+1))
	if err != nil {
		return fmt.Errorf("whepclient: read SDP answer: %w", err)
	}
	if len(answer) > maxAnswerSize {
		return fmt.Errorf("whepclient: SDP answer larger than %d bytes", maxAnswerSize)
	}

	loc := resp.Header.Get("Location")
	if loc == "" {
		return errors.New("whepclient: 201 without a Location header; the server must name the session URL")
	}
	sessionURL, err := endpoint.Parse(loc)
	if err != nil {
		return fmt.Errorf("whepclient: bad Location %q: %w", loc, err)
	}
	s.sessionURL = sessionURL.String()
	s.links = resp.Header.Values("Link")

	sdp := string(answer)
	if s.opt.RewriteAnswer != nil {
		sdp = s.opt.RewriteAnswer(sdp)
	}
	err = s.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: sdp})
	if err != nil {
		// The server created a session for us; release it.
		_ = s.deleteSession()
		return fmt.Errorf("whepclient: apply SDP answer: %w", err)
	}
	return nil
}
