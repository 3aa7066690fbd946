package config

import (
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
)

// UDPListen is the address of the ICE UDP socket.
func (w WebRTC) UDPListen() string {
	return net.JoinHostPort(w.ListenIP, strconv.Itoa(w.UDPPort))
}

// TCPListen is the address of the ICE-TCP listener, "" when it is off.
func (w WebRTC) TCPListen() string {
	if w.TCPPort == 0 {
		return ""
	}
	return net.JoinHostPort(w.ListenIP, strconv.Itoa(w.TCPPort))
}

// AdvertiseLoopback reports whether loopback candidates should be offered:
// when the media sockets listen on loopback or on every address. Browsers
// ignore them; WHEP clients on the same host (a local restreamer, the load
// generator) need them.
func (w WebRTC) AdvertiseLoopback() bool {
	if w.ListenIP == "" {
		return true
	}
	a, err := netip.ParseAddr(w.ListenIP)
	return err == nil && (a.IsLoopback() || a.IsUnspecified())
}

// NewLogger returns the process logger logLevel and logFormat ask for,
// writing to w.
func (c *Config) NewLogger(w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// Passphrase is the SRT passphrase of path: its own, else srt.passphrase.
func (c *Config) Passphrase(path string) string {
	if p := c.PathConfig(path).Passphrase; p != "" {
		return p
	}
	return c.SRT.Passphrase
}
