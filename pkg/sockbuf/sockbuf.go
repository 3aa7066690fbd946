// Package sockbuf sizes the kernel buffers of the server's UDP sockets and
// says when the kernel would not grant the size asked for.
//
// Linux caps SO_RCVBUF/SO_SNDBUF at net.core.rmem_max/wmem_max (212,992
// bytes on most distributions) without an error, then doubles what it
// grants for its own bookkeeping. A WebRTC socket that every viewer's RTCP
// and STUN arrive on, or an SRT socket a publisher's bursts land on,
// overflows at that size and drops datagrams silently; so the effective
// size is read back and a cap is reported with the sysctl that lifts it.
package sockbuf

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Sysctl files of the caps; variables so tests can point them elsewhere.
var (
	rmemMaxFile = "/proc/sys/net/core/rmem_max"
	wmemMaxFile = "/proc/sys/net/core/wmem_max"
)

// Result is what was asked for and what the kernel granted, in the
// kernel's terms (the granted size is twice the usable payload size).
// Zero requests leave the kernel's default and are never capped.
type Result struct {
	WantRecv, WantSend int // bytes requested (0: not set)
	Recv, Send         int // bytes granted, as getsockopt reports them
}

// Set requests recv and send bytes (0 leaves one alone) on c and reads
// back what the kernel granted.
func Set(c syscall.Conn, recv, send int) (Result, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return Result{}, err
	}
	res := Result{WantRecv: recv, WantSend: send}
	var opErr error
	err = rc.Control(func(fd uintptr) {
		set := func(opt, v int, name string) {
			if v > 0 && opErr == nil {
				if e := syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, opt, v); e != nil {
					opErr = fmt.Errorf("set %s to %d: %w", name, v, e)
				}
			}
		}
		set(syscall.SO_RCVBUF, recv, "SO_RCVBUF")
		set(syscall.SO_SNDBUF, send, "SO_SNDBUF")
		if opErr == nil {
			res.Recv, opErr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
		}
		if opErr == nil {
			res.Send, opErr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
		}
	})
	if err != nil {
		return res, err
	}
	return res, opErr
}

// Predict is Set's Result for a socket whose buffers another library sets
// (libsrt's UDP socket is not reachable from Go): Linux grants twice the
// request, capped at the sysctl maximum.
func Predict(recv, send int) (Result, error) {
	res := Result{WantRecv: recv, WantSend: send}
	if recv > 0 {
		rmax, err := readInt(rmemMaxFile)
		if err != nil {
			return res, err
		}
		res.Recv = 2 * min(recv, rmax)
	}
	if send > 0 {
		wmax, err := readInt(wmemMaxFile)
		if err != nil {
			return res, err
		}
		res.Send = 2 * min(send, wmax)
	}
	return res, nil
}

// RecvCapped and SendCapped report a request the kernel cut short.
func (r Result) RecvCapped() bool { return r.WantRecv > 0 && r.Recv < 2*r.WantRecv }
func (r Result) SendCapped() bool { return r.WantSend > 0 && r.Send < 2*r.WantSend }

// Fix is the command that lets the kernel grant r's requests, or "" when
// nothing was capped.
func (r Result) Fix() string {
	var cmds []string
	if r.RecvCapped() {
		cmds = append(cmds, "sysctl -w net.core.rmem_max="+strconv.Itoa(r.WantRecv))
	}
	if r.SendCapped() {
		cmds = append(cmds, "sysctl -w net.core.wmem_max="+strconv.Itoa(r.WantSend))
	}
	return strings.Join(cmds, " && ")
}

// Report logs r once: a warning with the fix when the kernel capped a
// request, else the sizes at debug level. key is the config key that sets
// the size, what names the socket.
func Report(log *slog.Logger, what, key string, r Result) {
	if fix := r.Fix(); fix != "" {
		log.Warn(what+" socket buffer smaller than configured; the kernel caps it, so bursts may be dropped",
			"key", key, "requested", r.WantRecv, "recv", r.Recv/2, "requested_send", r.WantSend, "send", r.Send/2,
			"fix", fix+" (as root; add it to /etc/sysctl.d/ to keep it; deploy.sh does)")
		return
	}
	log.Debug(what+" socket buffers", "recv", r.Recv/2, "send", r.Send/2)
}

func readInt(file string) (int, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	return n, nil
}
