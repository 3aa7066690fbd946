// Package pionslog routes pion's logs into log/slog.
//
// Only warnings and errors pass: below that pion narrates every ICE check
// and DTLS record, far too much for a server with hundreds of viewers or a
// load generator with hundreds of sessions, and dropped levels cost
// nothing because they are never formatted. Warnings that every normal
// session close produces, and the ones that describe how srtwhep runs on
// purpose, are lowered to debug, so a clean start logs no WARN and real
// problems are not buried under several lines per viewer.
package pionslog

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/pion/logging"
)

// routine are pion warnings that normal closes (or an offer whose answer
// is never used) produce.
var routine = []string{
	"closed pipe",
	"already closed",
	"use of closed network connection",
	"canceled by caller",
	"DTLS transport has not started yet",
	"Failed to ping without candidate pairs",
}

// expected are whole pion warnings (prefix and suffix) that describe how
// srtwhep runs on purpose, matched exactly so that pion's other warnings
// from the same code stay warnings.
var expected = []struct{ prefix, suffix string }{
	// The ICE UDP mux is one socket on the wildcard address by design: one
	// port to publish from a container whatever its addresses, and one
	// socket whose writes pionplane.BatchConn turns into sendmmsg. pion supports that
	// (it lists the interfaces for candidates) and only warns because it
	// would rather have one socket per address; a multi-homed host that
	// wants replies from the exact candidate address sets webrtc.listenIP.
	{"UDPMuxDefault should not listening on unspecified address", ""},
	// Browsers open an ICE-TCP connection to our passive candidate for
	// every viewer and close it unused once a UDP pair wins, or with the
	// session: the remote's clean close (EOF), not a fault. Resets and
	// timeouts stay warnings.
	{"Error reading first packet from ", ": EOF"},
	{"Failed to read streaming packet: EOF", ""},
}

// quiet reports whether msg is one of the warnings above, logged at debug.
func quiet(msg string) bool {
	for _, r := range routine {
		if strings.Contains(msg, r) {
			return true
		}
	}
	for _, e := range expected {
		if strings.HasPrefix(msg, e.prefix) && strings.HasSuffix(msg, e.suffix) &&
			len(msg) >= len(e.prefix)+len(e.suffix) {
			return true
		}
	}
	return false
}

// Factory is a pion logging.LoggerFactory writing to Log, each logger
// tagged lib=pion and its scope (ice, dtls, pc, …).
type Factory struct{ Log *slog.Logger }

// NewLogger implements logging.LoggerFactory.
func (f Factory) NewLogger(scope string) logging.LeveledLogger {
	log := f.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return logger{log: log.With("lib", "pion", "scope", scope)}
}

type logger struct{ log *slog.Logger }

func (l logger) emit(level slog.Level, msg string) {
	if quiet(msg) {
		level = slog.LevelDebug
	}
	l.log.Log(context.Background(), level, msg)
}

func (l logger) emitf(level slog.Level, format string, args ...any) {
	if l.log.Enabled(context.Background(), level) || l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.emit(level, fmt.Sprintf(format, args...))
	}
}

func (logger) Trace(string)          {}
func (logger) Tracef(string, ...any) {}
func (logger) Debug(string)          {}
func (logger) Debugf(string, ...any) {}
func (logger) Info(string)           {}
func (logger) Infof(string, ...any)  {}

func (l logger) Warn(msg string)                { l.emit(slog.LevelWarn, msg) }
func (l logger) Warnf(format string, a ...any)  { l.emitf(slog.LevelWarn, format, a...) }
func (l logger) Error(msg string)               { l.emit(slog.LevelError, msg) }
func (l logger) Errorf(format string, a ...any) { l.emitf(slog.LevelError, format, a...) }
