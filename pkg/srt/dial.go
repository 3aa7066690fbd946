package srt

/*
#cgo LDFLAGS: -lsrt
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <srt/srt.h>

static int srtwhep_sockaddr(const char* ip, int port, struct sockaddr_storage* ss, int* len) {
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in* v4 = (struct sockaddr_in*)ss;
	struct sockaddr_in6* v6 = (struct sockaddr_in6*)ss;
	if (inet_pton(AF_INET, ip, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(port);
		*len = sizeof(*v4);
	} else if (inet_pton(AF_INET6, ip, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(port);
		*len = sizeof(*v6);
	} else {
		return SRT_EINVPARAM;
	}
	return 0;
}

// srtwhep_connect_start starts connecting u to ip:port (IPv4 or IPv6
// text) without blocking, its outcome to come on epoll eid: a blocking
// srt_connect cannot be interrupted (closing the socket from another
// thread does not end it), and a dial must end when its context does. A
// non-empty local binds the socket to that address first. It returns 0
// or libsrt's error code.
static int srtwhep_connect_start(SRTSOCKET u, int eid, const char* ip, int port, const char* local) {
	struct sockaddr_storage ss;
	int len;
	int no = 0;
	int events = SRT_EPOLL_OUT | SRT_EPOLL_ERR;
	if (local[0] != 0) {
		if (srtwhep_sockaddr(local, 0, &ss, &len) != 0) return SRT_EINVPARAM;
		if (srt_bind(u, (struct sockaddr*)&ss, len) == SRT_ERROR) return srt_getlasterror(NULL);
	}
	if (srtwhep_sockaddr(ip, port, &ss, &len) != 0) return SRT_EINVPARAM;
	if (srt_setsockflag(u, SRTO_RCVSYN, &no, sizeof(no)) == SRT_ERROR) return srt_getlasterror(NULL);
	// Subscribed before connecting, so the outcome cannot come first.
	if (srt_epoll_add_usock(eid, u, &events) == SRT_ERROR) return srt_getlasterror(NULL);
	if (srt_connect(u, (struct sockaddr*)&ss, len) == SRT_ERROR) {
		int e = srt_getlasterror(NULL);
		if (e != SRT_EASYNCRCV) return e;
	}
	return 0;
}

// srtwhep_connect_wait waits up to ms for the connect's outcome: 0 while
// it is pending, 1 connected, 2 failed with *reason (read before anyone
// closes the socket: a closed socket has none any more, which is also
// why srtgo's Connect, which closes on failure, cannot be used), or a
// negative libsrt error code.
//
// The outcome is libsrt's epoll events, as srt_connect's documentation
// says, not srt_getsockstate: while a handshake completes, libsrt clears
// the socket's "connecting" flag before it sets "connected", and a
// state read between the two is SRTS_BROKEN (the state that also means
// "connecting timed out") with no reject reason, a success misread as
// a failure. SRT_EPOLL_OUT comes once the state is SRTS_CONNECTED; a
// failure brings SRT_EPOLL_ERR with the reject reason already set.
static int srtwhep_connect_wait(SRTSOCKET u, int eid, int ms, int* reason, int* state) {
	SRT_EPOLL_EVENT ev;
	int n = srt_epoll_uwait(eid, &ev, 1, ms);
	if (n < 0) return -srt_getlasterror(NULL);
	if (n == 0) return 0;
	*state = (int)srt_getsockstate(u);
	*reason = srt_getrejectreason(u);
	return (ev.events & SRT_EPOLL_ERR) ? 2 : 1;
}

// srtwhep_epoll is a new epoll's id, or a negative libsrt error code.
static int srtwhep_epoll(void) {
	int eid = srt_epoll_create();
	if (eid < 0) return -srt_getlasterror(NULL);
	return eid;
}

static void srtwhep_connect_end(SRTSOCKET u, int eid) {
	srt_epoll_remove_usock(eid, u);
	srt_epoll_release(eid);
}

// srtwhep_blocking puts a connected socket back into blocking receive
// mode, which the conn's reads rely on (see TOOLCHAIN.md).
static int srtwhep_blocking(SRTSOCKET u) {
	int yes = 1;
	if (srt_setsockflag(u, SRTO_RCVSYN, &yes, sizeof(yes)) == SRT_ERROR) return srt_getlasterror(NULL);
	return 0;
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"
	"unsafe"

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

// Reject reasons libsrt reports on the caller's side (srt.h SRT_REJ_*):
// they come from the handshake itself, not from the listener's callback.
const (
	rejPeer      = 2  // SRT_REJ_PEER: refused without a reason
	rejBadSecret = 10 // SRT_REJ_BADSECRET
	rejUnsecure  = 11 // SRT_REJ_UNSECURE
	rejTimeout   = 16 // SRT_REJ_TIMEOUT
)

// DialError is a connect that failed: libsrt's error and, when the
// listener refused, the reject reason it sent.
type DialError struct {
	Addr string
	// Reason is the SRT reject reason: below 1000 libsrt's own
	// (SRT_REJ_*), from 1000 the listener's access-control answer (1404
	// not found, 1401 unauthorized, …); 0 when the handshake never ran.
	Reason int
	Err    error // libsrt's error (a srtgo.SRTErrno), or the resolver's
}

func (e *DialError) Error() string {
	return fmt.Sprintf("srt connect to %s: %s", e.Addr, e.Describe())
}

func (e *DialError) Unwrap() error { return e.Err }

// Timeout reports a listener that never answered the handshake.
func (e *DialError) Timeout() bool {
	return errors.Is(e.Err, srtgo.ENoServer) || e.Reason == rejTimeout
}

// Rejected reports a listener that answered and refused.
func (e *DialError) Rejected() bool {
	return errors.Is(e.Err, srtgo.EConnRej) && !e.Timeout()
}

// Describe says what went wrong in a few words and how to fix it, with
// the reject reason's number: "no such stream (1404)".
func (e *DialError) Describe() string {
	if !e.Rejected() {
		if e.Timeout() {
			return "no answer (connection timed out)"
		}
		return e.Err.Error()
	}
	switch e.Reason {
	case srtgo.RejectionReasonNotFound:
		return "no such stream (1404)"
	case srtgo.RejectionReasonUnauthorized:
		return "unauthorized (1401); the listener wants credentials in the streamid"
	case srtgo.RejectionReasonForbidden:
		return "forbidden (1403); the listener does not let this address or user read the path"
	case srtgo.RejectionReasonBadMode:
		return "bad mode (1405); the listener does not serve this streamid's mode"
	case rejBadSecret:
		return fmt.Sprintf("wrong passphrase (%d); use the listener's passphrase", e.Reason)
	case rejUnsecure:
		return fmt.Sprintf("encryption mismatch (%d); the listener wants a passphrase, or wants none", e.Reason)
	case rejPeer:
		return fmt.Sprintf("refused without a reason (%d)", e.Reason)
	}
	if e.Reason >= srtgo.RejectionReasonPredefined {
		return reasonName(e.Reason)
	}
	return fmt.Sprintf("%s (%d)", C.GoString(C.srt_rejectreason_str(C.int(e.Reason))), e.Reason)
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

// connectPoll bounds each wait for the handshake's outcome, so ctx ends
// a connect promptly; a handshake takes a round trip or two.
const connectPoll = 5 * time.Millisecond

// connect runs the handshake without blocking in C for long, so ctx can
// end it; libsrt's SRTO_CONNTIMEO bounds it otherwise. Each C helper
// reads srt_getlasterror itself, in the same call: libsrt keeps it per
// thread, and a goroutine may move between cgo calls.
func connect(ctx context.Context, sock *srtgo.SrtSocket, ip net.IP, port int, local netip.Addr) error {
	u := C.SRTSOCKET(sock.GetSocket())
	eid := C.srtwhep_epoll()
	if eid < 0 {
		return fmt.Errorf("creating an epoll for the handshake: %w", srtgo.SRTErrno(-eid))
	}
	defer C.srtwhep_connect_end(u, eid)
	cip := C.CString(ip.String())
	clocal := C.CString("")
	if local.IsValid() {
		C.free(unsafe.Pointer(clocal))
		clocal = C.CString(local.String())
	}
	errno := C.srtwhep_connect_start(u, eid, cip, C.int(port), clocal)
	C.free(unsafe.Pointer(cip))
	C.free(unsafe.Pointer(clocal))
	if errno != 0 {
		return &DialError{Err: srtgo.SRTErrno(errno)}
	}
	for {
		var reason, state C.int
		switch r := C.srtwhep_connect_wait(u, eid, C.int(connectPoll.Milliseconds()), &reason, &state); {
		case r == 1 && state == C.SRTS_CONNECTED:
			if errno := C.srtwhep_blocking(u); errno != 0 {
				return fmt.Errorf("back to blocking mode: %w", srtgo.SRTErrno(errno))
			}
			return nil
		case r == 1 || (r == 2 && reason == 0):
			// Connected, then broken before we looked: libsrt gives every
			// failed handshake a reason (SRT_REJ_TIMEOUT, SRT_REJ_PEER, …).
			return &DialError{Err: srtgo.EConnLost}
		case r == 2 && reason == rejTimeout:
			return &DialError{Reason: rejTimeout, Err: srtgo.ENoServer}
		case r == 2:
			return &DialError{Reason: int(reason), Err: srtgo.EConnRej}
		case r < 0:
			return fmt.Errorf("waiting for the handshake: %w", srtgo.SRTErrno(-r))
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
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
