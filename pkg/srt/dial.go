package srt

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/haivision/srtgo"
)

// DialConfig configures Dial. Addr and StreamID are required.
type DialConfig struct {
	// Addr is the listener's HOST:PORT; a host name is resolved with the
	// dial's context.
	Addr string
	// StreamID is sent in the handshake, e.g. "read:live/cam1"; its path
	// is the conn's Path, under which the stream is published here.
	StreamID   string
	Passphrase string        // "" = no encryption; else 10 to 79 characters
	PBKeyLen   int           // 0 (libsrt default), 16, 24 or 32
	Latency    time.Duration // SRTO_LATENCY; 0 keeps libsrt's default (120 ms)
	// ConnectTimeout bounds the handshake (SRTO_CONNTIMEO); 0 keeps
	// libsrt's 3 s.
	ConnectTimeout time.Duration
	// ReadTimeout ends the conn when the listener sends nothing for this
	// long (see Config.ReadTimeout). On a socket from DialSocket it is
	// SRTO_RCVTIMEO: a Read that gets nothing for this long fails; 0 blocks.
	ReadTimeout time.Duration
	// RcvBuf is libsrt's receive buffer in bytes (SRTO_RCVBUF; libsrt
	// keeps at least 32 packets); 0 keeps libsrt's default.
	RcvBuf int
	// LocalIP is the address the call leaves from; the zero Addr lets the
	// kernel pick. Tests bind 127.0.0.2, 127.0.0.3, … to be distinct
	// clients.
	LocalIP netip.Addr
}

// Dial connects to an SRT listener as a caller that receives, and returns
// the same kind of Conn the listener hands to Config.Serve, so a pulled
// stream takes the publishers' pipeline. The socket is in blocking mode
// with SRTO_RCVTIMEO, like accepted ones (see TOOLCHAIN.md). ctx bounds
// the connect (cancelling it closes the socket, which ends the handshake)
// and, as for accepted conns, Read ends once it is done.
func Dial(ctx context.Context, cfg DialConfig) (*Conn, error) {
	id, err := ParseStreamID(cfg.StreamID)
	if err != nil {
		return nil, fmt.Errorf("srt dial: %w", err)
	}
	sock, closeSock, remote, err := dialSocket(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := sock.SetSockOptInt(srtoRcvTimeo, int(rcvTimeout.Milliseconds())); err != nil {
		closeSock()
		return nil, fmt.Errorf("srt dial %s: setting the receive timeout: %w", cfg.Addr, err)
	}
	c := newConn(ctx, sock, id, remote, cfg.ReadTimeout)
	c.closer = closeSock
	c.dialed = true
	return c, nil
}

// DialSocket connects a live-mode caller as Dial does, but returns
// libsrt's socket itself, blocking, for a caller that publishes (Write)
// or reads on its own, and sends the streamid unchecked, so tests can
// show the listener a malformed one. The tests of the listeners use it,
// through internal/srtcall outside this package. A refused connect is a
// *DialError with the listener's reject reason. Close the socket with
// CloseSocket.
func DialSocket(ctx context.Context, cfg DialConfig) (*srtgo.SrtSocket, error) {
	sock, closeSock, _, err := dialSocket(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.ReadTimeout > 0 {
		if err := sock.SetSockOptInt(srtoRcvTimeo, int(cfg.ReadTimeout.Milliseconds())); err != nil {
			closeSock()
			return nil, fmt.Errorf("srt dial %s: setting the receive timeout: %w", cfg.Addr, err)
		}
	}
	return sock, nil
}

// CloseSocket closes a socket DialSocket returned (see closeSocket for
// why through a copy).
func CloseSocket(sock *srtgo.SrtSocket) { closeSocket(sock)() }

// dialSocket checks cfg, resolves its host and runs the handshake. It
// returns the connected socket, a closer safe to call more than once, and
// the listener's address as IP:PORT.
func dialSocket(ctx context.Context, cfg DialConfig) (sock *srtgo.SrtSocket, closeSock func(), remote string, err error) {
	host, portStr, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, nil, "", fmt.Errorf("srt dial %q: %w (use HOST:PORT)", cfg.Addr, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return nil, nil, "", fmt.Errorf("srt dial %q: port must be 1-65535", cfg.Addr)
	}
	switch n := len(cfg.Passphrase); {
	case n != 0 && (n < 10 || n > 79):
		return nil, nil, "", fmt.Errorf("srt dial %s: the passphrase is %d characters long; SRT needs 10 to 79", cfg.Addr, n)
	case cfg.Latency < 0 || cfg.ConnectTimeout < 0 || cfg.ReadTimeout < 0:
		return nil, nil, "", fmt.Errorf("srt dial %s: negative latency or timeout", cfg.Addr)
	case cfg.RcvBuf < 0:
		return nil, nil, "", fmt.Errorf("srt dial %s: negative receive buffer", cfg.Addr)
	}
	ip, err := resolve(ctx, host)
	if err != nil {
		return nil, nil, "", &DialError{Addr: cfg.Addr, Err: err}
	}

	opts := map[string]string{
		"blocking":  "1",
		"mode":      "caller",
		"transtype": "live",
	}
	if cfg.StreamID != "" {
		opts["streamid"] = cfg.StreamID
	}
	if cfg.Passphrase != "" {
		opts["passphrase"] = cfg.Passphrase
		if cfg.PBKeyLen != 0 {
			opts["pbkeylen"] = strconv.Itoa(cfg.PBKeyLen)
		}
	}
	if cfg.Latency > 0 {
		opts["latency"] = strconv.FormatInt(cfg.Latency.Milliseconds(), 10)
	}
	if cfg.ConnectTimeout > 0 {
		opts["conntimeo"] = strconv.FormatInt(max(cfg.ConnectTimeout.Milliseconds(), 1), 10)
	}
	if cfg.RcvBuf > 0 {
		opts["rcvbuf"] = strconv.Itoa(cfg.RcvBuf)
	}
	sock = srtgo.NewSrtSocket(ip.String(), uint16(port), opts)
	if sock == nil {
		return nil, nil, "", fmt.Errorf("srt dial %s: cannot create the socket (was srt.Init called? options %v)", cfg.Addr, redactOpts(opts))
	}
	closeSock = sync.OnceFunc(closeSocket(sock))
	if err := connect(ctx, sock, ip, int(port), cfg.LocalIP); err != nil {
		closeSock()
		if ctx.Err() != nil {
			return nil, nil, "", fmt.Errorf("srt dial %s: %w", cfg.Addr, context.Cause(ctx))
		}
		if de, ok := err.(*DialError); ok {
			de.Addr = cfg.Addr
			return nil, nil, "", de
		}
		return nil, nil, "", fmt.Errorf("srt dial %s: %w", cfg.Addr, err)
	}
	return sock, closeSock, net.JoinHostPort(ip.String(), portStr), nil
}

// resolve turns host into one IP address, preferring IPv4 as srtgo does.
func resolve(ctx context.Context, host string) (net.IP, error) {
	if ip := net.ParseIP(host); ip != nil {
		return ip, nil
	}
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if a.IP.To4() != nil {
			return a.IP, nil
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("host %q has no address", host)
	}
	return addrs[0].IP, nil
}

// redactOpts hides the passphrase of socket options quoted in an error.
func redactOpts(opts map[string]string) map[string]string {
	out := make(map[string]string, len(opts))
	for k, v := range opts {
		if k == "passphrase" {
			v = "***"
		}
		out[k] = v
	}
	return out
}
