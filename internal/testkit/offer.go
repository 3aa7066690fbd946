package testkit

import (
	"testing"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/webrtc/v4"
)

// LoopbackOnly keeps a pion peer's ICE candidates on 127.0.0.1, so tests
// never depend on, or send to, the machine's other interfaces. mDNS is off
// because it would hide the loopback address behind a .local name.
func LoopbackOnly(se *webrtc.SettingEngine) {
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	se.SetIncludeLoopbackCandidate(true)
	se.SetInterfaceFilter(func(name string) bool { return name == "lo" })
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
}

// OfferOptions shape a viewer's offer. The zero value is what a browser
// sends a WHEP server: pion's default codec set, recvonly video.
type OfferOptions struct {
	// Video codecs to offer; nil offers pion's default set, which is
	// browser-like (VP8, H.264 in several profiles, VP9, AV1, …).
	Codecs []webrtc.RTPCodecParameters
	// Direction of the video m-section; zero means recvonly.
	Direction webrtc.RTPTransceiverDirection
	// Audio adds a recvonly Opus m-section after the video one.
	Audio bool
	// NetworkTypes limits ICE to these (nil: pion's default, UDP only on
	// loopback here).
	NetworkTypes []webrtc.NetworkType
	// Feedback sends NACKs and receiver reports, as a browser does.
	Feedback bool
	// SettingEngine, when set, adjusts the peer's settings after the
	// loopback defaults (ICE-TCP only, a logger, say).
	SettingEngine func(*webrtc.SettingEngine)
}

// Offerer is a viewer's PeerConnection with the offer it made.
type Offerer struct {
	PC  *webrtc.PeerConnection
	SDP string // the offer, candidates included
}

// Offer makes a real offer with a pion PeerConnection restricted to
// loopback, with its candidates gathered. The connection is returned so
// the test can apply the server's answer and receive media; it is closed
// when the test ends.
func Offer(t testing.TB, opts OfferOptions) *Offerer {
	t.Helper()
	me := &webrtc.MediaEngine{}
	if opts.Codecs == nil {
		if err := me.RegisterDefaultCodecs(); err != nil {
			t.Fatal(err)
		}
	} else {
		for _, c := range opts.Codecs {
			if err := me.RegisterCodec(c, webrtc.RTPCodecTypeVideo); err != nil {
				t.Fatal(err)
			}
		}
		if opts.Audio {
			opus := webrtc.RTPCodecParameters{
				RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2,
					SDPFmtpLine: "minptime=10;useinbandfec=1"},
				PayloadType: 111,
			}
			if err := me.RegisterCodec(opus, webrtc.RTPCodecTypeAudio); err != nil {
				t.Fatal(err)
			}
		}
	}
	se := webrtc.SettingEngine{}
	LoopbackOnly(&se)
	if opts.NetworkTypes != nil {
		se.SetNetworkTypes(opts.NetworkTypes)
	}
	if opts.SettingEngine != nil {
		opts.SettingEngine(&se)
	}
	ir := &interceptor.Registry{}
	if opts.Feedback {
		if err := webrtc.ConfigureNack(me, ir); err != nil {
			t.Fatal(err)
		}
		if err := webrtc.ConfigureRTCPReports(ir); err != nil {
			t.Fatal(err)
		}
	}
	pc, err := webrtc.NewAPI(webrtc.WithMediaEngine(me), webrtc.WithInterceptorRegistry(ir), webrtc.WithSettingEngine(se)).
		NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	// GracefulClose waits for pion's goroutines, which goleak checks.
	t.Cleanup(func() { _ = pc.GracefulClose() })
	dir := opts.Direction
	if dir == webrtc.RTPTransceiverDirectionUnknown {
		dir = webrtc.RTPTransceiverDirectionRecvonly
	}
	if _, err := pc.AddTransceiverFromKind(webrtc.RTPCodecTypeVideo, webrtc.RTPTransceiverInit{Direction: dir}); err != nil {
		t.Fatal(err)
	}
	if opts.Audio {
		if _, err := pc.AddTransceiverFromKind(webrtc.RTPCodecTypeAudio,
			webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionRecvonly}); err != nil {
			t.Fatal(err)
		}
	}
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		t.Fatal(err)
	}
	// WHEP has no trickle here: the offer must carry its candidates.
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(offer); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gathered:
	case <-time.After(10 * time.Second):
		t.Fatal("pion did not finish gathering loopback candidates within 10 s")
	}
	return &Offerer{PC: pc, SDP: pc.LocalDescription().SDP}
}
