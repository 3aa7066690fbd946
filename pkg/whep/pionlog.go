package whep

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/pion/logging"
)

// pionLoggerFactory routes pion's logs into slog at warn and above: below
// that pion narrates every ICE check and DTLS record, far too much for a
// server with hundreds of viewers.
type pionLoggerFactory struct{ log *slog.Logger }

func (f pionLoggerFactory) NewLogger(scope string) logging.LeveledLogger {
	return pionLogger{log: f.log.With("lib", "pion", "scope", scope)}
}

type pionLogger struct{ log *slog.Logger }

// routine are pion warnings that every normal session close (or an offer
// whose answer is never used) produces; at warn they would bury real
// problems under several lines per viewer, so they go to debug.
var routine = []string{
	"closed pipe",
	"already closed",
	"use of closed network connection",
	"canceled by caller",
	"DTLS transport has not started yet",
	"Failed to ping without candidate pairs",
}

func (l pionLogger) emit(level slog.Level, msg string) {
	for _, r := range routine {
		if strings.Contains(msg, r) {
			level = slog.LevelDebug
			break
		}
	}
	l.log.Log(context.Background(), level, msg)
}

func (pionLogger) Trace(string)          {}
func (pionLogger) Tracef(string, ...any) {}
func (pionLogger) Debug(string)          {}
func (pionLogger) Debugf(string, ...any) {}
func (pionLogger) Info(string)           {}
func (pionLogger) Infof(string, ...any)  {}

func (l pionLogger) Warn(msg string) { l.emit(slog.LevelWarn, msg) }
func (l pionLogger) Warnf(format string, args ...any) {
	l.emit(slog.LevelWarn, fmt.Sprintf(format, args...))
}
func (l pionLogger) Error(msg string) { l.emit(slog.LevelError, msg) }
func (l pionLogger) Errorf(format string, args ...any) {
	l.emit(slog.LevelError, fmt.Sprintf(format, args...))
}
