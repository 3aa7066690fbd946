// Package config parses, defaults and validates the srtwhep YAML file.
//
// The order is fixed: Default(), then a strict decode of the file over it
// (unknown keys are refused), then SRTWHEP_<SECTION>_<KEY> environment
// overrides, then Validate. Every error names where the bad value came from
// (FILE:LINE or the environment variable), the key, what is wrong and how to
// fix it, because a server that refuses to start must say why in one line.
//
// Each section is its own struct so that the composition root can hand a
// component only its part (cfg.SRT to the SRT server, cfg.WebRTC to WHEP).
package config

import (
	"bytes"
	"fmt"
	"net/netip"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is the whole server configuration. Build it with Default or Load;
// a Config assembled in Go should be checked with Validate.
type Config struct {
	LogLevel     string          `yaml:"logLevel" reload:"restart"`
	LogFormat    string          `yaml:"logFormat" reload:"restart"`
	SRT          SRT             `yaml:"srt"`
	HTTP         HTTP            `yaml:"http"`
	WebRTC       WebRTC          `yaml:"webrtc"`
	Metrics      Metrics         `yaml:"metrics"`
	Readers      Readers         `yaml:"readers"`
	Transcode    Transcode       `yaml:"transcode"`
	API          API             `yaml:"api"`
	AuthHook     AuthHook        `yaml:"authHook"`
	Hooks        Hooks           `yaml:"hooks"`
	PathDefaults Path            `yaml:"pathDefaults"`
	Paths        map[string]Path `yaml:"paths"`

	// src remembers where each key was set, so that Validate can point at
	// the line (or variable) of a value that is only wrong in combination
	// with another one. Nil for a Config built in Go.
	src *sources
}

// SRT configures the SRT ingest listener.
type SRT struct {
	Listen      string   `yaml:"listen" reload:"restart"`
	Latency     Duration `yaml:"latency" reload:"restart"`
	Passphrase  string   `yaml:"passphrase" reload:"live"`
	PBKeyLen    int      `yaml:"pbKeyLen" reload:"restart"`
	ReadTimeout Duration `yaml:"readTimeout" reload:"restart"`
	// SocketBuffer is the kernel receive buffer of the SRT UDP socket in
	// bytes (SRTO_UDP_RCVBUF), capped by net.core.rmem_max.
	SocketBuffer int `yaml:"socketBuffer" reload:"restart"`
	// MaxPulls bounds the edge pulls (paths with a source) running at
	// once; a viewer of one more gets 503.
	MaxPulls int `yaml:"maxPulls" reload:"restart"`
	// MaxPublishers and MaxPublishersPerIP cap publisher connections in
	// total and per client address (per /64 for IPv6), refused in the
	// SRT handshake with overload (1402).
	MaxPublishers      int `yaml:"maxPublishers" reload:"restart"`
	MaxPublishersPerIP int `yaml:"maxPublishersPerIP" reload:"restart"`
}

// HTTP configures the WHEP/player/API listener.
type HTTP struct {
	Listen        string `yaml:"listen" reload:"restart"`
	AllowOrigin   string `yaml:"allowOrigin" reload:"restart"`
	MaxBodyBytes  int64  `yaml:"maxBodyBytes" reload:"restart"`
	MaxHandshakes int    `yaml:"maxHandshakes" reload:"restart"`
	// MaxHandshakesPerClient caps them per client address (per /64 for
	// IPv6).
	MaxHandshakesPerClient int `yaml:"maxHandshakesPerClient" reload:"restart"`
	// OfferRate and OfferBurst are each client's token bucket for WHEP
	// POSTs (per /64 for IPv6): offers a second sustained, and at once.
	OfferRate  int `yaml:"offerRate" reload:"restart"`
	OfferBurst int `yaml:"offerBurst" reload:"restart"`
	// MaxPendingOffers caps the answered offers whose viewer has not
	// started ICE yet.
	MaxPendingOffers int `yaml:"maxPendingOffers" reload:"restart"`
	// IdleTimeout closes a kept-alive connection without a new request;
	// BodyTimeout cuts a request body that has not fully arrived in time.
	IdleTimeout Duration `yaml:"idleTimeout" reload:"restart"`
	BodyTimeout Duration `yaml:"bodyTimeout" reload:"restart"`
	// MaxConns and MaxConnsPerClient cap open connections in total and per
	// client address (per /64 for IPv6).
	MaxConns          int `yaml:"maxConns" reload:"restart"`
	MaxConnsPerClient int `yaml:"maxConnsPerClient" reload:"restart"`
	// TrustedProxies are the reverse proxies whose X-Forwarded-For or
	// Forwarded headers name the client.
	TrustedProxies []string `yaml:"trustedProxies" reload:"restart"`
	TLS            TLS      `yaml:"tls"`
	// PublicURL, when set, is this server's own address as viewers reach
	// it (https://edge1.example.com): WHEP session URLs become absolute
	// URLs under it, so a load balancer in front of several servers still
	// sends a session's PATCH and DELETE to the server that holds it.
	PublicURL string `yaml:"publicURL" reload:"restart"`
	// ReconnectURL, when set, is the entry point (a load balancer, another
	// server) that viewers' players are sent to by a reconnect event when
	// this server drains; empty: back to the endpoint they came by.
	ReconnectURL string `yaml:"reconnectURL" reload:"restart"`
	// DrainTimeout is how long a SIGTERM waits, after telling the viewers
	// to reconnect, for them to move before their sessions are ended.
	DrainTimeout Duration `yaml:"drainTimeout" reload:"restart"`
	// MaxEventStreams caps the open WHEP server-sent event streams.
	MaxEventStreams int `yaml:"maxEventStreams" reload:"restart"`
}

// TLS turns on HTTPS on the HTTP listener: certificate files, or an
// automatic certificate for Domain from Let's Encrypt (ACME TLS-ALPN-01).
type TLS struct {
	CertFile string `yaml:"certFile" reload:"restart"`
	KeyFile  string `yaml:"keyFile" reload:"restart"`
	Domain   string `yaml:"domain" reload:"restart"`
	CacheDir string `yaml:"cacheDir" reload:"restart"`
	Email    string `yaml:"email" reload:"restart"`
}

// Enabled reports whether the listener serves HTTPS.
func (t TLS) Enabled() bool { return t.CertFile != "" || t.Domain != "" }

// WebRTC configures ICE and the media transport shared by all sessions.
type WebRTC struct {
	// ListenIP binds the media sockets to one local address; "" binds all.
	ListenIP string `yaml:"listenIP" reload:"restart"`
	// UDPPort is the one ICE UDP port of every viewer. 0 lets the kernel
	// pick a free one, for tests and local runs: viewers behind NAT need a
	// fixed port published 1:1.
	UDPPort int `yaml:"udpPort" reload:"restart"`
	// TCPPort is the ICE-TCP fallback; 0 turns ICE-TCP off.
	TCPPort int `yaml:"tcpPort" reload:"restart"`
	// MaxTCPPerClient caps the ICE-TCP connections open at once from one
	// client address (per /64 for IPv6), under the server's 4,096.
	MaxTCPPerClient   int         `yaml:"maxTCPPerClient" reload:"restart"`
	PublicIPs         []IP        `yaml:"publicIPs" reload:"restart"`
	Interfaces        []string    `yaml:"interfaces" reload:"restart"`
	ICEServers        []ICEServer `yaml:"iceServers" reload:"restart"`
	HandshakeTimeout  Duration    `yaml:"handshakeTimeout" reload:"restart"`
	DisconnectTimeout Duration    `yaml:"disconnectTimeout" reload:"restart"`
	// SocketBuffer is the receive and send buffer of the shared WebRTC UDP
	// socket in bytes, capped by net.core.rmem_max/wmem_max.
	SocketBuffer int `yaml:"socketBuffer" reload:"restart"`
	// MaxResendBitrate bounds what every viewer's NACKs get resent, all
	// together, in bit/s; each viewer has its own bound too (a quarter of
	// what it is sent, pkg/rtpsend).
	MaxResendBitrate int64 `yaml:"maxResendBitrate" reload:"restart"`
}

// PublicIPStrings returns PublicIPs in the string form pion's
// ICEAddressRewriteRule.External expects.
func (w WebRTC) PublicIPStrings() []string {
	out := make([]string, 0, len(w.PublicIPs))
	for _, ip := range w.PublicIPs {
		out = append(out, ip.String())
	}
	return out
}

// ICEServer is a STUN or TURN server advertised to viewers (Link headers).
type ICEServer struct {
	URLs       []string `yaml:"urls"`
	Username   string   `yaml:"username"`
	Credential string   `yaml:"credential"`
	// AuthSecret is the TURN server's shared secret (coturn
	// use-auth-secret / static-auth-secret): each WHEP answer then carries
	// a credential minted for it that expires after CredentialTTL, instead
	// of a static Username and Credential.
	AuthSecret string `yaml:"authSecret"`
	// CredentialTTL is how long a minted credential is valid; 0 means 24h
	// (the TURN REST draft's recommendation).
	CredentialTTL Duration `yaml:"credentialTTL"`
}

// Metrics configures the Prometheus listener.
type Metrics struct {
	// Listen is the address of GET /metrics; "" disables it.
	Listen string `yaml:"listen" reload:"restart"`
	// Pprof serves Go profiles under /debug/pprof/ on the same listener.
	Pprof bool `yaml:"pprof" reload:"restart"`
}

// Readers bounds what viewers may cost.
type Readers struct {
	QueueSize int `yaml:"queueSize" reload:"restart"`
	MaxTotal  int `yaml:"maxTotal" reload:"live"`
	// MaxCPUPercent refuses new viewers while the server uses more than
	// this share of the CPU it may use (affinity, cgroup quota); 0 disables.
	MaxCPUPercent int `yaml:"maxCPUPercent" reload:"restart"`
}

// Transcode bounds what transcoding video may cost: every transcoder of
// the server (a path's video: auto or transcode) draws on one CPU budget,
// and its output and input are capped.
type Transcode struct {
	// MaxCPUPercent is the share of the CPU the server may use (its
	// cores, or the container's cpus quota) that transcoders may take
	// together; a transcode whose measured or estimated cost does not fit
	// is refused and its viewers get 409 naming this key. 0: no limit.
	MaxCPUPercent int `yaml:"maxCPUPercent" reload:"restart"`
	// MaxHeight and MaxFrameRate cap a transcoder's output (the width
	// follows the aspect ratio); 0: the source's.
	MaxHeight    int `yaml:"maxHeight" reload:"restart"`
	MaxFrameRate int `yaml:"maxFrameRate" reload:"restart"`
	// MaxDecodeArea refuses to transcode pictures of more pixels (width ×
	// height); 0: no limit.
	MaxDecodeArea int `yaml:"maxDecodeArea" reload:"restart"`
}

// API configures the control API under /v1, on a listener of its own: on
// the WHEP listener any same-host TCP forwarder would hand it the world.
type API struct {
	// Listen is the API's TCP address; "" turns the API off.
	Listen string `yaml:"listen" reload:"restart"`
	// Token is the Bearer token the API requires; "" leaves the API open to
	// loopback clients only (and then Listen must be a loopback address).
	Token string `yaml:"token" reload:"live"`
	// AllowedHosts are the host names, besides localhost and IP
	// addresses, that a request's Host header may carry: a page that
	// rebinds its own DNS name to 127.0.0.1 sends that name and is
	// refused.
	AllowedHosts []string `yaml:"allowedHosts" reload:"restart"`
}

// AuthHook asks an external HTTP service whether a publisher or a viewer
// may proceed; URL "" disables it.
type AuthHook struct {
	URL      string   `yaml:"url" reload:"live"`
	Timeout  Duration `yaml:"timeout" reload:"live"`
	CacheTTL Duration `yaml:"cacheTTL" reload:"live"`
}

// Hooks posts an event to a control plane whenever a publisher, a viewer
// or an edge source comes or goes; URL "" disables it.
type Hooks struct {
	URL     string   `yaml:"url" reload:"restart"`
	Timeout Duration `yaml:"timeout" reload:"restart"`
	// QueueSize bounds the events waiting for the receiver; beyond it new
	// events are dropped, so media never waits for the hook.
	QueueSize int `yaml:"queueSize" reload:"restart"`
}

// Default returns the built-in configuration; configs/srtwhep.yml documents
// the same values and a test keeps the two equal.
func Default() *Config {
	return &Config{
		LogLevel:  "info",
		LogFormat: "text",
		SRT: SRT{
			Listen:      ":8890",
			Latency:     Duration(120 * time.Millisecond),
			PBKeyLen:    16,
			ReadTimeout: Duration(2 * time.Second),
			// The packages' defaults (srt.DefaultSocketBuffer,
			// sockbuf.DefaultWebRTC), which config cannot import.
			SocketBuffer: 4 << 20,
			MaxPulls:     64, // edge.DefaultMaxPulls
			// srt.DefaultMaxPublishers, srt.DefaultMaxPublishersPerIP
			MaxPublishers:      100,
			MaxPublishersPerIP: 10,
		},
		HTTP: HTTP{
			Listen:            ":8889",
			AllowOrigin:       "*",
			MaxBodyBytes:      64 << 10,
			MaxHandshakes:     32, // admission.DefaultMaxHandshakes
			IdleTimeout:       Duration(15 * time.Second),
			BodyTimeout:       Duration(5 * time.Second),
			MaxConns:          4096,
			MaxConnsPerClient: 128,
			TLS:               TLS{CacheDir: "/var/lib/srtwhep/acme"},

			MaxHandshakesPerClient: 16,  // admission.DefaultMaxHandshakesPerClient
			OfferRate:              5,   // admission.DefaultOfferRate
			OfferBurst:             20,  // admission.DefaultOfferBurst
			MaxPendingOffers:       512, // admission.DefaultMaxPendingOffers
			DrainTimeout:           Duration(5 * time.Second),
			MaxEventStreams:        1024, // whepevents.DefaultMaxStreams
		},
		WebRTC: WebRTC{
			UDPPort:           8189,
			TCPPort:           8189,
			MaxTCPPerClient:   8, // mediaplane.DefaultMaxTCPPerClient
			HandshakeTimeout:  Duration(10 * time.Second),
			DisconnectTimeout: Duration(5 * time.Second),
			SocketBuffer:      4 << 20,
			MaxResendBitrate:  100_000_000,
		},
		// Loopback: outside Docker nothing else keeps the metrics (and
		// pprof) private; the compose file listens on all addresses inside
		// the container and publishes the port on the host's loopback.
		Metrics: Metrics{Listen: "127.0.0.1:9998"},
		// MediaMTX's API port, on loopback: see API.
		API:     API{Listen: "127.0.0.1:9997"},
		Readers: Readers{QueueSize: 128, MaxCPUPercent: 85},
		// 35 %: one capped transcode of the common worst case (1080p60
		// with B-frames to 720p30, 25 % of one core measured) fits on one
		// core with room for a costlier scene, a second does not, and
		// 65 % stays with the viewers (README, "Transcoding").
		Transcode: Transcode{MaxCPUPercent: 35, MaxHeight: 720, MaxFrameRate: 30, MaxDecodeArea: 3840 * 2160},
		AuthHook: AuthHook{
			Timeout:  Duration(2 * time.Second),
			CacheTTL: Duration(10 * time.Second),
		},
		Hooks: Hooks{Timeout: Duration(2 * time.Second), QueueSize: 1024}, // events.DefaultTimeout, DefaultQueueSize
		PathDefaults: Path{Audio: AudioAuto, AudioBitrate: 96000, OverridePublisher: TakeoverEntitled,
			Video: VideoAuto, MaxKeyframeInterval: Duration(4 * time.Second),
			PublisherGrace: Duration(15 * time.Second),
			SourceTimeout:  Duration(5 * time.Second), SourceLinger: Duration(10 * time.Second),
			// tsdemux.DefaultMaxUnitBytes, hub.DefaultGOPCacheDuration and
			// hub.DefaultGOPCacheBytes, which config cannot import.
			MaxUnitBytes: 4 << 20, GOPCacheDuration: Duration(10 * time.Second), GOPCacheBytes: 32 << 20},
		Paths: map[string]Path{},
	}
}

// File is the file the Config was loaded from; "" for the embedded
// defaults or a Config built in Go. The server watches it for changes.
func (c *Config) File() string {
	if c.src == nil {
		return ""
	}
	return c.src.file
}

// Dump returns the effective configuration as YAML that Load accepts and
// that decodes to the same values. It includes secrets (passphrases,
// credentials) verbatim.
func (c *Config) Dump() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2) // the indentation of configs/srtwhep.yml
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("dump config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("dump config: %w", err)
	}
	return b.Bytes(), nil
}

// IP is an IP address (never a hostname) in YAML.
type IP struct{ netip.Addr }

// Duration is a time.Duration written as "200ms" or "10s" in YAML.
type Duration time.Duration

// String formats like time.Duration ("200ms", "10s").
func (d Duration) String() string { return time.Duration(d).String() }
