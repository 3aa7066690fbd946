package whepclient

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/pion/logging"
)

// pionLoggerFactory sends pion's warnings and errors to the session's slog
// logger instead of pion's default stderr writer, which would interleave
// output from hundreds of load-generator sessions. Lower levels are dropped
// before formatting so they cost nothing.
type pionLoggerFactory struct{ log *slog.Logger }

func (f pionLoggerFactory) NewLogger(scope string) logging.LeveledLogger {
	return pionLogger{log: f.log.With("pion", scope)}
}

type pionLogger struct{ log *slog.Logger }

func (l pionLogger) emit(level slog.Level, msg string) {
	l.log.Log(context.Background(), level, msg)
}

func (l pionLogger) emitf(level slog.Level, format string, args ...any) {
	if l.log.Enabled(context.Background(), level) {
		l.emit(level, fmt.Sprintf(format, args...))
	}
}

func (pionLogger) Trace(string)          {}
func (pionLogger) Tracef(string, ...any) {}
func (pionLogger) Debug(string)          {}
func (pionLogger) Debugf(string, ...any) {}
func (pionLogger) Info(string)           {}
func (pionLogger) Infof(string, ...any)  {}

func (l pionLogger) Warn(msg string)                { l.emit(slog.LevelWarn, msg) }
func (l pionLogger) Warnf(format string, a ...any)  { l.emitf(slog.LevelWarn, format, a...) }
func (l pionLogger) Error(msg string)               { l.emit(slog.LevelError, msg) }
func (l pionLogger) Errorf(format string, a ...any) { l.emitf(slog.LevelError, format, a...) }
