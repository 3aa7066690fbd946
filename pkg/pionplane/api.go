package pionplane

import (
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/pion/dtls/v3"
	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	ptransport "github.com/pion/transport/v5"
	"github.com/pion/transport/v5/stdnet"
	"github.com/pion/webrtc/v4"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/pionslog"
	"github.com/srtwhep/srtwhep/pkg/plane"
	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
	"github.com/srtwhep/srtwhep/pkg/sockbuf"
)

// muxes are the sockets every session shares.
type muxes struct {
	log      *slog.Logger
	udpConn  *net.UDPConn
	udpBatch *BatchConn
	udpAddr  *net.UDPAddr
	udpDrops *sockbuf.Drops // nil when /proc cannot tell
	udp      ice.UDPMux
	tcpLn    net.Listener
	tcp      ice.TCPMux
}

func (m *muxes) tcpAddrString() string {
	if m.tcpLn == nil {
		return ""
	}
	return m.tcpLn.Addr().String()
}

// close ends the muxes (which close their sockets) after every
// PeerConnection is gone.
func (m *muxes) close() {
	if m.udp != nil {
		_ = m.udp.Close()
	}
	if m.udpBatch != nil {
		_ = m.udpBatch.Close()
	}
	_ = m.udpConn.Close()
	if m.tcpLn != nil {
		_ = m.tcpLn.Close()
	}
	if m.tcp != nil {
		// pion/ice v4.4.8's TCPMuxDefault.Close waits for every connection
		// it is setting up; when a browser opens two ICE-TCP connections
		// with the same ufrag, one of them is dropped from its map without
		// being closed and the wait never ends. Shutdown must finish
		// within its budget, so the wait is bounded: past it the stuck
		// goroutine is left to the exiting process.
		done := make(chan struct{})
		go func() {
			_ = m.tcp.Close()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(tcpMuxCloseWait):
			if m.log != nil {
				m.log.Warn("ICE-TCP mux did not close in time; leaving it to process exit", "wait", tcpMuxCloseWait)
			}
		}
	}
}

// tcpMuxCloseWait bounds the wait for pion's ICE-TCP mux on shutdown.
const tcpMuxCloseWait = time.Second

// filteredNet hides interfaces the config excludes and, with public IPs,
// the addresses of families that have none. The UDP mux on an unspecified
// address enumerates interfaces itself and ignores the SettingEngine's
// filters, so the filters have to live here too.
type filteredNet struct {
	*stdnet.Net
	keep   func(string) bool // nil = every interface
	keepIP func(net.IP) bool // nil = every address
}

func (n filteredNet) Interfaces() ([]*ptransport.Interface, error) {
	all, err := n.Net.Interfaces()
	if err != nil {
		return nil, err
	}
	out := all[:0:0]
	for _, ifc := range all {
		if n.keep != nil && !n.keep(ifc.Name) {
			continue
		}
		if n.keepIP != nil {
			addrs, err := ifc.Addrs()
			if err != nil {
				continue // no addresses: nothing to advertise
			}
			kept := ptransport.NewInterface(ifc.Interface)
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok && n.keepIP(ipn.IP) {
					kept.AddAddress(a)
				}
			}
			ifc = kept
		}
		out = append(out, ifc)
	}
	return out, nil
}

func interfaceFilter(names []string) func(string) bool {
	if len(names) == 0 {
		return nil
	}
	return func(name string) bool { return slices.Contains(names, name) }
}

func listenMuxes(cfg plane.Config, limit *plane.TCPLimit, log *slog.Logger) (*muxes, error) {
	lf := pionslog.Factory{Log: log}
	ua, err := net.ResolveUDPAddr("udp", cfg.UDPListen)
	if err != nil {
		return nil, fmt.Errorf("whep: UDP listen address %q: %w; use host:port like 0.0.0.0:8189", cfg.UDPListen, err)
	}
	uc, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("whep: listen on UDP %s: %w; is another process (or srtwhep) using the port?", cfg.UDPListen, err)
	}
	m := &muxes{log: log, udpConn: uc, udpAddr: uc.LocalAddr().(*net.UDPAddr)}
	m.udpDrops = sockbuf.SizeWebRTC(uc, cfg.SocketBuffer, log)
	// Every viewer's media leaves through this one socket: batching its
	// writes into sendmmsg(2) is what keeps the kernel's per-packet cost
	// from dominating fan-out.
	bc, err := NewBatchConn(uc, 0, 0)
	if err != nil {
		uc.Close()
		return nil, fmt.Errorf("whep: UDP batching: %w", err)
	}
	m.udpBatch = bc
	params := ice.UDPMuxParams{Logger: lf.NewLogger("udpmux"), UDPConn: bc}
	keep, keepIP := interfaceFilter(cfg.Interfaces), publicFamilyFilter(cfg.PublicIPs)
	if (keep != nil || keepIP != nil) && m.udpAddr.IP.IsUnspecified() {
		sn, err := stdnet.NewNet()
		if err != nil {
			m.close()
			return nil, fmt.Errorf("whep: list network interfaces: %w", err)
		}
		params.Net = filteredNet{Net: sn, keep: keep, keepIP: keepIP}
	}
	m.udp = ice.NewUDPMuxDefault(params)

	if cfg.TCPListen != "" {
		ln, err := net.Listen("tcp", cfg.TCPListen)
		if err != nil {
			m.close()
			return nil, fmt.Errorf("whep: listen on TCP %s for ICE-TCP: %w; free the port or set the TCP port to 0 to disable ICE-TCP", cfg.TCPListen, err)
		}
		m.tcpLn = ln
		// pion's mux takes every connection it is given: the caps come
		// before it, as on the own plane.
		limited := limit.Listener(ln)
		if len(cfg.PublicIPs) > 0 && ln.Addr().(*net.TCPAddr).IP.IsUnspecified() {
			m.tcp = familyTCPMux{newTCPMux(lf.NewLogger("tcpmux"), familyListener{limited})}
		} else {
			m.tcp = newTCPMux(lf.NewLogger("tcpmux"), limited)
		}
	}
	return m, nil
}

// networkTypes derives the candidate network types from what is bound, so a
// server on an IPv4 socket never advertises IPv6 candidates it cannot serve.
func networkTypes(m *muxes) []webrtc.NetworkType {
	var out []webrtc.NetworkType
	add := func(ip net.IP, v4, v6 webrtc.NetworkType) {
		switch {
		case ip.To4() != nil:
			out = append(out, v4)
		case ip.IsUnspecified(): // "[::]" is dual-stack on Linux
			out = append(out, v4, v6)
		default:
			out = append(out, v6)
		}
	}
	add(m.udpAddr.IP, webrtc.NetworkTypeUDP4, webrtc.NetworkTypeUDP6)
	if m.tcpLn != nil {
		add(m.tcpLn.Addr().(*net.TCPAddr).IP, webrtc.NetworkTypeTCP4, webrtc.NetworkTypeTCP6)
	}
	return out
}

// opusCodec is what we answer for audio: Opus as the transcoder makes it,
// 48 kHz stereo. No NACK: browsers do not offer it for audio, and the
// decoder conceals a lost 20 ms frame better than a late resend would.
var opusCodec = webrtc.RTPCodecCapability{
	MimeType:    webrtc.MimeTypeOpus,
	ClockRate:   av.OpusClockRate,
	Channels:    2,
	SDPFmtpLine: plane.OpusFmtp,
}

// apis are the two pion APIs sessions are built from: with Opus registered
// for paths that have audio, and without for those that do not. pion
// rejects (port 0) an m-section none of whose codecs it knows, which is
// exactly the answer an audio offer on a video-only path needs.
type apis struct {
	video, av *webrtc.API
}

func (a *apis) pick(audio bool) *webrtc.API {
	if audio {
		return a.av
	}
	return a.video
}

func newAPIs(cfg plane.Config, m *muxes, log *slog.Logger) (*apis, error) {
	video, err := newAPI(cfg, m, log, false)
	if err != nil {
		return nil, err
	}
	withAudio, err := newAPI(cfg, m, log, true)
	if err != nil {
		return nil, err
	}
	return &apis{video: video, av: withAudio}, nil
}

// h265Profiles are the H.265 formats registered with pion, one for each
// profile-id and tier-flag a browser offers (Safari: Main and Main 10).
var h265Profiles = []map[string]string{
	{"profile-id": "1", "tier-flag": "0"}, {"profile-id": "1", "tier-flag": "1"},
	{"profile-id": "2", "tier-flag": "0"}, {"profile-id": "2", "tier-flag": "1"},
}

// newAPI builds a pion API sessions use. MediaEngine and interceptor
// registry are templates: pion copies the MediaEngine per PeerConnection
// and builds fresh interceptors from the factories.
func newAPI(cfg plane.Config, m *muxes, log *slog.Logger, audio bool) (*webrtc.API, error) {
	me := &webrtc.MediaEngine{}
	fb := []webrtc.RTCPFeedback{{Type: "nack"}, {Type: "nack", Parameter: "pli"}, {Type: "ccm", Parameter: "fir"}}
	// The profiles registered are the ones the offer model chooses from,
	// so pion never refuses the choice.
	for i, p := range sdpoffer.H264Profiles {
		err := me.RegisterCodec(webrtc.RTPCodecParameters{
			RTPCodecCapability: webrtc.RTPCodecCapability{
				MimeType:     webrtc.MimeTypeH264,
				ClockRate:    90000,
				SDPFmtpLine:  plane.H264Fmtp(p),
				RTCPFeedback: fb,
			},
			PayloadType: webrtc.PayloadType(102 + 2*i),
		}, webrtc.RTPCodecTypeVideo)
		if err != nil {
			return nil, fmt.Errorf("whep: register H.264 %s: %w", p, err)
		}
	}
	// H.265 by the fmtp parameters pion matches on (profile-id,
	// tier-flag, tx-mode; not level-id): Main and Main 10, both tiers.
	for i, p := range h265Profiles {
		err := me.RegisterCodec(webrtc.RTPCodecParameters{
			RTPCodecCapability: webrtc.RTPCodecCapability{
				MimeType:     webrtc.MimeTypeH265,
				ClockRate:    90000,
				SDPFmtpLine:  plane.H265Fmtp(p),
				RTCPFeedback: fb,
			},
			PayloadType: webrtc.PayloadType(116 + 2*i),
		}, webrtc.RTPCodecTypeVideo)
		if err != nil {
			return nil, fmt.Errorf("whep: register H.265 %v: %w", p, err)
		}
	}
	if audio {
		err := me.RegisterCodec(webrtc.RTPCodecParameters{RTPCodecCapability: opusCodec, PayloadType: 111}, webrtc.RTPCodecTypeAudio)
		if err != nil {
			return nil, fmt.Errorf("whep: register Opus: %w", err)
		}
	}

	// No interceptors at all: each one costs work per packet per viewer.
	// NACKs are answered by the session from shared payloads
	// (retransmit.go) instead of pion's responder, which keeps a private
	// copy of every packet per viewer, and sender reports are written by
	// the session once a second (senderreport.go) instead of an
	// interceptor that takes a lock and reads the clock for every packet.
	reg := &interceptor.Registry{}
	lf := pionslog.Factory{Log: log}

	se := webrtc.SettingEngine{LoggerFactory: lf}
	se.SetICEUDPMux(m.udp)
	if m.tcp != nil {
		se.SetICETCPMux(m.tcp)
	}
	se.SetNetworkTypes(keepPublicFamilies(networkTypes(m), cfg.PublicIPs))
	// AES-GCM first: several times cheaper per packet than AES-CM + HMAC,
	// which stays for clients that lack GCM.
	se.SetSRTPProtectionProfiles(dtls.SRTP_AEAD_AES_128_GCM, dtls.SRTP_AES128_CM_HMAC_SHA1_80)
	// Firefox rejects .local names and our candidates are public anyway.
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.SetIncludeLoopbackCandidate(cfg.IncludeLoopback)
	if keep := interfaceFilter(cfg.Interfaces); keep != nil {
		se.SetInterfaceFilter(keep)
	}
	// ICE-TCP candidates come from enumerating interfaces, so on a
	// listener bound to one address advertise only that address, and with
	// public IPs only families that have one. The UDP mux's candidates do
	// not pass through this filter (filteredNet does that for them).
	var bound net.IP
	if m.tcpLn != nil {
		if ip := m.tcpLn.Addr().(*net.TCPAddr).IP; !ip.IsUnspecified() {
			bound = ip
		}
	}
	if family := publicFamilyFilter(cfg.PublicIPs); bound != nil || family != nil {
		se.SetIPFilter(func(c net.IP) bool {
			return (bound == nil || c.Equal(bound)) && (family == nil || family(c))
		})
	}
	if len(cfg.PublicIPs) > 0 {
		err := se.SetICEAddressRewriteRules(webrtc.ICEAddressRewriteRule{
			External:        cfg.PublicIPs,
			AsCandidateType: webrtc.ICECandidateTypeHost,
			Mode:            webrtc.ICEAddressRewriteReplace,
		})
		if err != nil {
			return nil, fmt.Errorf("whep: public IPs %v: %w", cfg.PublicIPs, err)
		}
	}
	// pion goes disconnected after the first half without traffic and
	// failed after the second, so a session ends DisconnectTimeout after
	// the viewer went silent.
	half := cfg.DisconnectTimeout / 2
	se.SetICETimeouts(half, cfg.DisconnectTimeout-half, cfg.Keepalive)

	return webrtc.NewAPI(
		webrtc.WithMediaEngine(me),
		webrtc.WithInterceptorRegistry(reg),
		webrtc.WithSettingEngine(se),
	), nil
}
