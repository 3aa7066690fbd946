// Package plane is the contract between the WHEP server (pkg/whep) and the
// media plane (pkg/mediaplane): what a viewer's offer asks of the plane,
// what the plane answers, why a viewer's connection ended, and how the
// plane runs a viewer's sender (pkg/rtpsend). It holds no state; its types
// live here so that whep and rtpsend declare what they use while the plane
// imports neither, and the plane's tests build no WHEP server.
package plane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/pion/rtcp"

	"github.com/srtwhep/srtwhep/pkg/av"
	"github.com/srtwhep/srtwhep/pkg/sdpoffer"
)

// Config is what the plane is built from: the sockets and the addresses
// it advertises.
type Config struct {
	// UDPListen is the one UDP socket for all viewers, "0.0.0.0:8189" in
	// production, "127.0.0.1:0" in tests.
	UDPListen string
	// TCPListen is the ICE-TCP fallback; "" disables it.
	TCPListen string
	// PublicIPs replace the host candidates' addresses (NAT 1:1, e.g.
	// Docker's published port); IPv4 and IPv6 may be mixed.
	PublicIPs []string
	// Interfaces limits the interfaces whose addresses are advertised
	// (empty = all).
	Interfaces []string
	// IncludeLoopback advertises loopback candidates (tests, clients on
	// the same host).
	IncludeLoopback bool
	// SocketBuffer is the shared UDP socket's receive and send buffer in
	// bytes: 0 takes sockbuf.DefaultWebRTC, a negative value keeps the
	// kernel's default.
	SocketBuffer int
	// MaxTCPPerClient caps the ICE-TCP connections open at once from one
	// client (IPv4 address, IPv6 /64); 0 takes the plane's default.
	MaxTCPPerClient int

	HandshakeTimeout  time.Duration // answer → connected; 0: 10 s
	DisconnectTimeout time.Duration // no traffic from a viewer → ended; 0: 15 s

	Logger *slog.Logger
}

// Defaults for the zero values of Config.
const (
	DefaultHandshakeTimeout  = 10 * time.Second
	DefaultDisconnectTimeout = 15 * time.Second
)

// Check reports what a plane cannot be built from.
func (c Config) Check() error {
	if c.UDPListen == "" {
		return errors.New("the UDP listen address is empty; set it to e.g. 0.0.0.0:8189")
	}
	for _, ip := range c.PublicIPs {
		if _, err := netip.ParseAddr(ip); err != nil {
			return fmt.Errorf("public IP %q is not an IP address; use a public IPv4/IPv6 like 203.0.113.7", ip)
		}
	}
	return nil
}

// WithDefaults fills in the zero values.
func (c Config) WithDefaults() Config {
	c.HandshakeTimeout = positiveOr(c.HandshakeTimeout, DefaultHandshakeTimeout)
	c.DisconnectTimeout = positiveOr(c.DisconnectTimeout, DefaultDisconnectTimeout)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func positiveOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Codec is one answered codec.
type Codec struct {
	PayloadType uint8
	Fmtp        string // without the payload type; "" for none
	// Video is the video codec answered (H264Fmtp or H265Fmtp made
	// Fmtp); unused for audio.
	Video av.Codec
}

// H264Fmtp is the answer's fmtp for profile, one of
// sdpoffer.H264Profiles.
func H264Fmtp(profile string) string {
	return "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=" + profile
}

// h265FmtpKeys are the RFC 7798 §7.1 parameters an H.265 answer repeats
// from the offer: they describe the one stream sent (profile, tier,
// level) and that it goes as a single RTP stream.
var h265FmtpKeys = []string{"level-id", "profile-id", "tier-flag"}

// H265Fmtp is the answer's fmtp for the viewer's offered H.265 fmtp
// parameters (keys in lower case): its profile-id, tier-flag and
// level-id where it gave them, and tx-mode=SRST, the only mode sent.
func H265Fmtp(offered map[string]string) string {
	var parts []string
	for _, k := range h265FmtpKeys {
		if v := offered[k]; v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(append(parts, "tx-mode=SRST"), ";")
}

// VideoCodec is the video the answer to m sends: the viewer's payload type for
// the chosen codec, and the fmtp line: for H.264 the viewer's own
// profile-level-id (of the payload type whose profile matches the
// stream's), so a strict decoder (Safari) accepts the stream; for H.265
// the viewer's own profile, tier and level.
func VideoCodec(m *sdpoffer.Offer) Codec {
	sent := m.Sent()
	c := Codec{PayloadType: sent.PT, Video: m.VideoCodec}
	if m.VideoCodec == av.CodecH265 {
		c.Fmtp = H265Fmtp(sent.Params)
	} else {
		c.Fmtp = H264Fmtp(sent.ProfileLevelID())
	}
	return c
}

// OpusPT is the viewer's payload type for Opus, 0 when it cannot receive
// it.
func OpusPT(m *sdpoffer.Offer) uint8 {
	if a := m.AudioSection(); a != nil {
		return a.Opus.PT
	}
	return 0
}

// OpusFmtp is what the plane answers for audio: Opus as the transcoder
// makes it, 48 kHz stereo.
const OpusFmtp = "minptime=10;useinbandfec=1;stereo=1;sprop-stereo=1"

// Offer is one viewer's offer as the plane answers it: the offer's one
// model with the codecs the server chose from it, and the callbacks the
// viewer's connection reports to.
type Offer struct {
	// Session is the viewer's session: the plane closes the connection at
	// once when it ends, so a sender blocked on a full ICE-TCP link does
	// not hold a kick or a shutdown.
	Session context.Context
	// Model is the offer as sdpoffer.Parse read it, once, for everyone:
	// the sections to answer, their mids, the viewer's credentials and
	// fingerprints.
	Model *sdpoffer.Offer
	Video Codec
	// Audio answers the offer's audio section with Opus; nil rejects it.
	Audio *Codec
	// OnRTCP receives the RTCP the viewer sends. Calls never overlap,
	// none comes after the connection's Close has returned, and it must
	// not block: it runs on the goroutine that reads every viewer's RTCP.
	OnRTCP func(pkts []rtcp.Packet)
	// OnDone is told once why the connection ended on its own, one of
	// the reasons below, on whatever goroutine noticed; it must not
	// block.
	OnDone func(reason error)
	// OnICEStart, when set, is called once when the viewer starts taking
	// part in ICE (its first valid check), so the caller can count the
	// expensive handshake from then and not from the answer. It must not
	// block: it runs on the demultiplexer.
	OnICEStart func()
	Log        *slog.Logger
}

// ICE is a side's ICE credentials and candidates ("candidate:…" values).
type ICE struct {
	Ufrag, Pwd string
	Candidates []string
}

// Answer is a plane's answer to an Offer: the complete SDP (every
// candidate: we do not trickle) and our ICE ufrag in it (the session's
// first ETag) as the plane generated it, so nobody parses our own answer
// back.
type Answer struct {
	SDP   string
	Ufrag string
}

// Reasons a connection ends, the one set: the plane ends viewers with
// them, Offer.OnDone reports them, and the WHEP session logs them as they
// are ("viewer closed" reason=…) and counts the failures among them.
var (
	// ErrServerClosed: the plane is closing, because the server is.
	ErrServerClosed = errors.New("server is shutting down")
	// ErrClosed: the connection's Close ended it, so the caller's own
	// reason stands; calls on a closed connection return it.
	ErrClosed = errors.New("connection closed")
	// ErrPeerClosed: the viewer closed the connection, with a DTLS alert
	// (close_notify or fatal) or by closing its ICE-TCP connection.
	ErrPeerClosed = errors.New("peer connection closed")
	// ErrConsentExpired: nothing valid from the viewer (ICE check or
	// RTCP) within the disconnect timeout, or no answer to our consent
	// checks from its media address (RFC 7675).
	ErrConsentExpired = errors.New("connection failed: consent expired (nothing valid from the viewer, or no answer to the server's consent checks, within the timeout)")
	// ErrHandshakeTimeout: ICE and DTLS did not complete in time.
	ErrHandshakeTimeout = errors.New("not connected within the handshake timeout")
	// ErrFailed is wrapped by the errors of a connection that broke (a
	// DTLS handshake failing, say).
	ErrFailed = errors.New("connection failed")
)

// Failed reports whether reason is the viewer's side or the link ending
// the connection, not the server's (ErrClosed, ErrServerClosed): before
// the viewer is connected, that is a failed handshake.
func Failed(reason error) bool {
	return errors.Is(reason, ErrConsentExpired) || errors.Is(reason, ErrHandshakeTimeout) ||
		errors.Is(reason, ErrFailed) || errors.Is(reason, ErrPeerClosed)
}
