// Package srtcall is a test-only SRT caller built on srtgo sockets, for
// publishers and readers alike. It exists because srtgo's own Connect
// closes the socket on failure, which erases the reject reason the
// listener sent; tests need that reason.
package srtcall

/*
#cgo LDFLAGS: -lsrt
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <srt/srt.h>

static int srtcall_connect(SRTSOCKET u, const char* ip, int port, int* reason) {
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1) return SRT_EINVPARAM;
	if (srt_connect(u, (struct sockaddr*)&sa, sizeof(sa)) == SRT_ERROR) {
		*reason = srt_getrejectreason(u);
		return srt_getlasterror(NULL);
	}
	return 0;
}
*/
import "C"

import (
	"fmt"
	"net"
	"runtime"
	"strconv"
	"time"
	"unsafe"

	"github.com/haivision/srtgo"
)

// Reasons libsrt itself reports on the caller side (srt.h SRT_REJ_*).
const (
	ReasonPeer      = 2  // SRT_REJ_PEER: the listener's callback rejected without a reason
	ReasonBadSecret = 10 // SRT_REJ_BADSECRET: wrong passphrase
	ReasonUnsecure  = 11 // SRT_REJ_UNSECURE: passphrase required or unexpected
)

// Options for Dial; zero values keep libsrt's defaults.
type Options struct {
	StreamID   string
	Passphrase string
	Latency    time.Duration
	// RcvBuf is libsrt's receive buffer in bytes (SRTO_RCVBUF; libsrt
	// keeps at least 32 packets): a reader that stops reading fills a
	// small one within a fraction of a second, where the default takes
	// half a minute of a typical stream.
	RcvBuf int
	// ReadTimeout makes a Read that gets nothing for this long fail
	// (SRTO_RCVTIMEO), so a test that waits for data it never gets fails
	// instead of hanging; 0 blocks.
	ReadTimeout time.Duration
}

// RejectedError is a failed connect with the reject reason libsrt reported.
type RejectedError struct {
	Reason int
	Err    srtgo.SRTErrno
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("srt connect: %v (reject reason %d: %s)", e.Err, e.Reason,
		C.GoString(C.srt_rejectreason_str(C.int(e.Reason))))
}

func (e *RejectedError) Unwrap() error { return e.Err }

// Dial connects a blocking live-mode caller to addr (IPv4). The returned
// socket is ready for Write, or Read with a streamid that reads; close it
// through a copy (see TOOLCHAIN.md).
func Dial(addr *net.UDPAddr, o Options) (*srtgo.SrtSocket, error) {
	opts := map[string]string{"mode": "caller", "blocking": "1", "transtype": "live"}
	if o.StreamID != "" {
		opts["streamid"] = o.StreamID
	}
	if o.Passphrase != "" {
		opts["passphrase"] = o.Passphrase
	}
	if o.Latency > 0 {
		opts["latency"] = strconv.FormatInt(o.Latency.Milliseconds(), 10)
	}
	if o.RcvBuf > 0 {
		opts["rcvbuf"] = strconv.Itoa(o.RcvBuf)
	}

	sock := srtgo.NewSrtSocket(addr.IP.String(), uint16(addr.Port), opts)
	if sock == nil {
		return nil, fmt.Errorf("srtcall: cannot create a socket with %v", opts)
	}
	if o.ReadTimeout > 0 {
		// SRTO_RCVTIMEO (14); srtgo's option table lacks it.
		if err := sock.SetSockOptInt(14, int(o.ReadTimeout.Milliseconds())); err != nil {
			Close(sock)
			return nil, fmt.Errorf("srtcall: SRTO_RCVTIMEO: %w", err)
		}
	}
	ip := C.CString(addr.IP.To4().String())
	defer C.free(unsafe.Pointer(ip))
	var reason C.int
	// srt_getlasterror is thread-local: stay on one OS thread.
	runtime.LockOSThread()
	errno := C.srtcall_connect(C.SRTSOCKET(sock.GetSocket()), ip, C.int(addr.Port), &reason)
	runtime.UnlockOSThread()
	if errno != 0 {
		closer := *sock
		closer.Close()
		runtime.SetFinalizer(sock, nil)
		return nil, &RejectedError{Reason: int(reason), Err: srtgo.SRTErrno(errno)}
	}
	return sock, nil
}

// Close closes a socket Dial returned, through a copy: srtgo's Close
// writes the struct it is called on while its value-receiver methods
// (Read, Write) copy it, and its finalizer would close the id a second
// time later, when libsrt may have given it to a new socket.
func Close(s *srtgo.SrtSocket) {
	c := *s
	c.Close()
	runtime.SetFinalizer(s, nil)
}
