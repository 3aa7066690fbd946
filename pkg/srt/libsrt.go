package srt

/*
#cgo LDFLAGS: -lsrt
#include <string.h>
#include <srt/srt.h>
#include <srt/logging_api.h>

// srtwhep_sockname returns the bound port of an SRT socket, or -1.
static int srtwhep_sockport(SRTSOCKET u) {
	struct sockaddr_storage ss;
	int len = sizeof(ss);
	memset(&ss, 0, sizeof(ss));
	if (srt_getsockname(u, (struct sockaddr*)&ss, &len) == SRT_ERROR) return -1;
	if (ss.ss_family == AF_INET) return ntohs(((struct sockaddr_in*)&ss)->sin_port);
	if (ss.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6*)&ss)->sin6_port);
	return -1;
}
*/
import "C"

import (
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/haivision/srtgo"
)

// libsrtLog is where libsrt's own log lines go. libsrt logging is global to
// the process, so the sink is the logger of the running Server (set by Run);
// with no server running there is no socket that could log.
var libsrtLog atomic.Pointer[slog.Logger]

// libsrtLimit rate-limits libsrt's lines for the whole process, as libsrt
// logging is global.
var libsrtLimit = newLogLimiter(libsrtLogEvery)

// Init starts libsrt and routes its log lines (warnings and errors only)
// into the running Server's logger. Call once from main, before Run.
func Init() {
	srtgo.InitSRT()
	// Time, thread name and severity are slog's job; EOL would end up in
	// the message.
	C.srt_setlogflags(C.SRT_LOGF_DISABLE_TIME | C.SRT_LOGF_DISABLE_THREADNAME |
		C.SRT_LOGF_DISABLE_SEVERITY | C.SRT_LOGF_DISABLE_EOL)
	srtgo.SrtSetLogLevel(srtgo.SrtLogLevelWarning)
	srtgo.SrtSetLogHandler(forwardLibsrtLog)
}

// Cleanup stops libsrt. Call once from main after every Server.Run returned.
func Cleanup() {
	srtgo.SrtUnsetLogHandler()
	libsrtLimit.stop()
	srtgo.CleanupSRT()
}

func forwardLibsrtLog(level srtgo.SrtLogLevel, file string, line int, area, msg string) {
	log := libsrtLog.Load()
	if log == nil || libsrtNoise(msg) {
		return
	}
	lvl := slog.LevelWarn
	switch {
	case handshakeDetail[area]:
		lvl = slog.LevelDebug
	case level <= srtgo.SrtLogLevelErr:
		lvl = slog.LevelError
	}
	msg = strings.TrimSpace(strings.TrimPrefix(msg, ": "))
	libsrtLimit.log(limitedLine{log: log, level: lvl, msg: msg, area: area})
}

// handshakeDetail are libsrt functions that explain a failed handshake in
// several lines; processConnectRequest's "rsp(REJECT): 1010 - Incorrect
// passphrase" already says it once at warn.
var handshakeDetail = map[string]bool{
	"interpretSrtHandshake": true,
	"newConnection":         true,
	"processSrtMsg_KMREQ":   true,
}

// libsrtNoise drops warnings that libsrt emits as part of normal operation
// in the blocking mode we use: every SRTO_RCVTIMEO expiry on an idle
// publisher logs "nothing to read", four times a second.
func libsrtNoise(msg string) bool {
	return strings.Contains(msg, "nothing to read") ||
		// Closing the listener to stop Accept is how shutdown works.
		strings.Contains(msg, "is already closed")
}

// boundPort asks libsrt which UDP port a socket is bound to (srtgo has no
// getsockname), so Listen ":0" can report its real port.
func boundPort(sock int) int {
	return int(C.srtwhep_sockport(C.SRTSOCKET(sock)))
}
