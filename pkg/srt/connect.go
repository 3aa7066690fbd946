package srt

// A caller's handshake, run without blocking in C so that the dial's
// context can end it: the libsrt helpers and the Go loop polling them,
// under Dial and DialSocket (dial.go).

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
	"fmt"
	"net"
	"net/netip"
	"time"
	"unsafe"

	"github.com/haivision/srtgo"
)

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
