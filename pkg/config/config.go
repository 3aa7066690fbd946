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
	"log/slog"
	"net/netip"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is the whole server configuration. Build it with Default, Load or
// Parse; a Config assembled in Go should be checked with Validate.
type Config struct {
	LogLevel     string          `yaml:"logLevel"`
	LogFormat    string          `yaml:"logFormat"`
	SRT          SRT             `yaml:"srt"`
	HTTP         HTTP            `yaml:"http"`
	WebRTC       WebRTC          `yaml:"webrtc"`
	Metrics      Metrics         `yaml:"metrics"`
	Readers      Readers         `yaml:"readers"`
	API          API             `yaml:"api"`
	AuthHook     AuthHook        `yaml:"authHook"`
	PathDefaults Path            `yaml:"pathDefaults"`
	Paths        map[string]Path `yaml:"paths"`

	// src remembers where each key was set, so that Validate can point at
	// the line (or variable) of a value that is only wrong in combination
	// with another one. Nil for a Config built in Go.
	src *sources
}

// SRT configures the SRT ingest listener.
type SRT struct {
	Listen      string   `yaml:"listen"`
	Latency     Duration `yaml:"latency"`
	Passphrase  string   `yaml:"passphrase"`
	PBKeyLen    int      `yaml:"pbKeyLen"`
	ReadTimeout Duration `yaml:"readTimeout"`
}

// HTTP configures the WHEP/player/API listener.
type HTTP struct {
	Listen        string `yaml:"listen"`
	AllowOrigin   string `yaml:"allowOrigin"`
	MaxBodyBytes  int64  `yaml:"maxBodyBytes"`
	MaxHandshakes int    `yaml:"maxHandshakes"`
}

// WebRTC configures ICE and the media transport shared by all sessions.
type WebRTC struct {
	// ListenIP binds the media sockets to one local address; "" binds all.
	ListenIP          string      `yaml:"listenIP"`
	UDPPort           int         `yaml:"udpPort"`
	TCPPort           int         `yaml:"tcpPort"`
	PublicIPs         []IP        `yaml:"publicIPs"`
	Interfaces        []string    `yaml:"interfaces"`
	ICEServers        []ICEServer `yaml:"iceServers"`
	HandshakeTimeout  Duration    `yaml:"handshakeTimeout"`
	DisconnectTimeout Duration    `yaml:"disconnectTimeout"`
	Keepalive         Duration    `yaml:"keepalive"`
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
}

// Metrics configures the Prometheus listener.
type Metrics struct {
	// Listen is the address of GET /metrics; "" disables it.
	Listen string `yaml:"listen"`
	// Pprof serves Go profiles under /debug/pprof/ on the same listener.
	Pprof bool `yaml:"pprof"`
}

// Readers bounds what viewers may cost.
type Readers struct {
	QueueSize int `yaml:"queueSize"`
	MaxTotal  int `yaml:"maxTotal"`
	// MaxCPUPercent refuses new viewers while the server uses more than
	// this share of the CPU it may use (affinity, cgroup quota); 0 disables.
	MaxCPUPercent int `yaml:"maxCPUPercent"`
}

// API protects the control API under /v1 on the HTTP listener.
type API struct {
	// Token is the Bearer token the API requires; "" leaves the API open to
	// loopback clients only.
	Token string `yaml:"token"`
}

// AuthHook asks an external HTTP service whether a publisher or a viewer
// may proceed; URL "" disables it.
type AuthHook struct {
	URL      string   `yaml:"url"`
	Timeout  Duration `yaml:"timeout"`
	CacheTTL Duration `yaml:"cacheTTL"`
}

// Path holds the per-path settings. Zero MaxReaders means unlimited; an
// empty Passphrase falls back to SRT.Passphrase; empty credentials mean
// anyone may publish; empty ReadTokens mean anyone may watch; empty IP
// lists allow every address.
type Path struct {
	MaxReaders  int      `yaml:"maxReaders"`
	Passphrase  string   `yaml:"passphrase"`
	PublishUser string   `yaml:"publishUser"`
	PublishPass string   `yaml:"publishPass"`
	ReadTokens  []string `yaml:"readTokens"`
	PublishIPs  []string `yaml:"publishIPs"`
	ReadIPs     []string `yaml:"readIPs"`
}

// Default returns the built-in configuration; configs/srtwhep.yml documents
// the same values and a test keeps the two equal.
func Default() *Config {
	return &Config{
		LogLevel:  "info",
		LogFormat: "text",
		SRT: SRT{
			Listen:      ":8890",
			Latency:     Duration(200 * time.Millisecond),
			PBKeyLen:    16,
			ReadTimeout: Duration(10 * time.Second),
		},
		HTTP: HTTP{
			Listen:        ":8889",
			AllowOrigin:   "*",
			MaxBodyBytes:  64 << 10,
			MaxHandshakes: 32,
		},
		WebRTC: WebRTC{
			UDPPort:           8189,
			TCPPort:           8189,
			HandshakeTimeout:  Duration(10 * time.Second),
			DisconnectTimeout: Duration(5 * time.Second),
			Keepalive:         Duration(2 * time.Second),
		},
		Metrics: Metrics{Listen: ":9998"},
		Readers: Readers{QueueSize: 128, MaxCPUPercent: 85},
		AuthHook: AuthHook{
			Timeout:  Duration(2 * time.Second),
			CacheTTL: Duration(10 * time.Second),
		},
		Paths: map[string]Path{},
	}
}

// PathConfig returns the settings of one path: its entry under paths (whose
// unset keys were filled from pathDefaults when the file was decoded) or
// pathDefaults when the path is not listed.
func (c *Config) PathConfig(path string) Path {
	if p, ok := c.Paths[path]; ok {
		return p
	}
	return c.PathDefaults
}

// File is the file the Config was loaded from; "" for the embedded
// defaults or a Config built in Go. The server watches it for changes.
func (c *Config) File() string {
	if c.src == nil {
		return ""
	}
	return c.src.file
}

// SlogLevel maps LogLevel to a slog level; an unknown level (only possible
// in a Config that skipped Validate) means info.
func (c *Config) SlogLevel() slog.Level {
	switch c.LogLevel {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// Dump returns the effective configuration as YAML that Parse accepts and
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

// MustIP parses s and panics when it is not an IP address; for tests and
// literals.
func MustIP(s string) IP { return IP{netip.MustParseAddr(s)} }

// Duration is a time.Duration written as "200ms" or "10s" in YAML.
type Duration time.Duration

// String formats like time.Duration ("200ms", "10s").
func (d Duration) String() string { return time.Duration(d).String() }
