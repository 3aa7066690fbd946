// Package pionslog routes pion's logs into log/slog.
//
// Only warnings and errors pass: below that pion narrates every ICE check
// and DTLS record, far too much for a server with hundreds of viewers or a
// load generator with hundreds of sessions, and dropped levels cost
// nothing because they are never formatted. Warnings that every normal
// session close produces are lowered to debug, so real problems are not
// buried under several lines per viewer.
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

// quiet reports whether msg is a routine warning, logged at debug.
func quiet(msg string) bool {
	for _, r := range routine {
		if strings.Contains(msg, r) {
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
